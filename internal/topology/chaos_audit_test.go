package topology_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// maxHistoryEvents bounds any workflow history, however long the database
// was away.
const maxHistoryEvents = 10000

// drain waits until every expected delivery has a final record and the
// receivers have been quiet for a few seconds, or bound passes.
func (c *chaosRun) drain(ctx context.Context, expected int, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(bound)
	lastArrivals, quietSince := -1, time.Now()
	var total, open int
	var err error
	for {
		err = c.d.db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('pending', 'retrying'))
			FROM webhook_deliveries WHERE NOT is_test`).Scan(&total, &open)
		if n := c.recv.Count(); n != lastArrivals {
			lastArrivals, quietSince = n, time.Now()
		}
		if err == nil && total >= expected && open == 0 && time.Since(quietSince) > 5*time.Second {
			return time.Since(start), nil
		}
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "3D000" {
			return time.Since(start), fmt.Errorf("the app database is gone (dropped by someone else?): %w", err)
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("after %s: %d of %d expected records, %d not final (last error %v)", bound, total, expected, open, err)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// readRecords reads every delivery record and its attempts' start times
// straight from PostgreSQL.
func readRecords(ctx context.Context, pool *pgxpool.Pool) ([]topology.DeliveryRecord, error) {
	rows, err := pool.Query(ctx, `SELECT id, subscription_id, event_id, status, attempt_count, created_at
		FROM webhook_deliveries WHERE NOT is_test`)
	if err != nil {
		return nil, err
	}
	var recs []topology.DeliveryRecord
	index := map[string]int{}
	for rows.Next() {
		var r topology.DeliveryRecord
		if err := rows.Scan(&r.ID, &r.WebhookID, &r.EventID, &r.Status, &r.AttemptCount, &r.CreatedAt); err != nil {
			return nil, err
		}
		r.AttemptStarts, r.AttemptOutcomes = map[int]time.Time{}, map[int]string{}
		r.AttemptSnippets, r.AttemptMessages = map[int]string{}, map[int]string{}
		index[r.ID] = len(recs)
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = pool.Query(ctx, `SELECT delivery_id, attempt_number, started_at,
		CASE WHEN status_code > 0 THEN status_code::text ELSE error_kind END, response_snippet, error_message
		FROM webhook_delivery_attempts`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			id, outcome, snippet, message string
			n                             int
			at                            time.Time
		)
		if err := rows.Scan(&id, &n, &at, &outcome, &snippet, &message); err != nil {
			return nil, err
		}
		if i, ok := index[id]; ok {
			recs[i].AttemptStarts[n], recs[i].AttemptOutcomes[n] = at, outcome
			recs[i].AttemptSnippets[n], recs[i].AttemptMessages[n] = snippet, message
		}
	}
	return recs, rows.Err()
}

// longestHistory is the run with the most history events.
func (c *chaosRun) longestHistory(ctx context.Context) (topology.WorkflowHistory, int, error) {
	hs, err := topology.WorkflowHistories(ctx, c.d.cluster.Server.Address, c.d.cluster.Namespace)
	var longest topology.WorkflowHistory
	for _, h := range hs {
		if h.Events > longest.Events {
			longest = h
		}
	}
	return longest, len(hs), err
}

// checkHistories checks every run's history, open or closed, and those
// measured after the long database outage.
func (c *chaosRun) checkHistories(ctx context.Context) topology.CheckResult {
	r := topology.CheckResult{Name: topology.CheckHistory}
	longest, n, err := c.longestHistory(ctx)
	if err != nil {
		r.Failures++
		r.Examples = append(r.Examples, fmt.Sprintf("list workflow histories: %v", err))
		return r
	}
	r.Checked = n
	r.Note = fmt.Sprintf("longest %d events (%s)", longest.Events, longest.WorkflowID)
	if longest.Events > maxHistoryEvents {
		r.Failures++
		r.Examples = append(r.Examples, fmt.Sprintf("%s run %s has %d history events", longest.WorkflowID, longest.RunID, longest.Events))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.afterOutage {
		r.Note += fmt.Sprintf("; after the outage %d events (%s)", h.Events, h.WorkflowID)
		if h.Events > maxHistoryEvents {
			r.Failures++
			r.Examples = append(r.Examples, fmt.Sprintf("after the outage: %s run %s has %d history events", h.WorkflowID, h.RunID, h.Events))
		}
	}
	return r
}
