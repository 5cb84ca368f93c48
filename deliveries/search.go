package deliveries

import (
	"context"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// SearchFilter selects a page of an account's deliveries across its live
// webhooks. Empty strings and nil times do not filter.
type SearchFilter struct {
	EventID   string
	JobID     string
	RunID     string
	Status    string
	EventType string
	Since     *time.Time // created at or after
	Until     *time.Time // created before
	Limit     int
	Offset    int
}

// SearchDeliveries returns a page of the account's deliveries to its live
// webhooks, newest first, and how many match in all. The most selective key
// given (event, then run, then job) picks the query and so the index that
// drives it (db/queries/delivery_search.sql says why).
func (s *Store) SearchDeliveries(ctx context.Context, accountID int64, f SearchFilter) ([]Delivery, int64, error) {
	var (
		rows  []dbq.SearchDeliveriesRow
		total int64
		err   error
	)
	status, eventType, jobID, runID := orNil(f.Status), orNil(f.EventType), orNil(f.JobID), orNil(f.RunID)
	limit, offset := int32(f.Limit), int32(f.Offset)
	switch {
	case f.EventID != "":
		p := dbq.SearchDeliveriesByEventParams{AccountID: accountID, EventID: f.EventID, Since: f.Since, Until: f.Until,
			Status: status, EventType: eventType, JobID: jobID, RunID: runID, RowLimit: limit, RowOffset: offset}
		var list []dbq.SearchDeliveriesByEventRow
		if list, err = s.q.SearchDeliveriesByEvent(ctx, p); err == nil {
			rows = convertRows(list, func(r dbq.SearchDeliveriesByEventRow) dbq.SearchDeliveriesRow { return dbq.SearchDeliveriesRow(r) })
			total, err = s.q.CountSearchDeliveriesByEvent(ctx, dbq.CountSearchDeliveriesByEventParams{AccountID: accountID, EventID: f.EventID,
				Since: f.Since, Until: f.Until, Status: status, EventType: eventType, JobID: jobID, RunID: runID})
		}
	case f.RunID != "":
		p := dbq.SearchDeliveriesByRunParams{AccountID: accountID, RunID: f.RunID, Since: f.Since, Until: f.Until,
			Status: status, EventType: eventType, JobID: jobID, RowLimit: limit, RowOffset: offset}
		var list []dbq.SearchDeliveriesByRunRow
		if list, err = s.q.SearchDeliveriesByRun(ctx, p); err == nil {
			rows = convertRows(list, func(r dbq.SearchDeliveriesByRunRow) dbq.SearchDeliveriesRow { return dbq.SearchDeliveriesRow(r) })
			total, err = s.q.CountSearchDeliveriesByRun(ctx, dbq.CountSearchDeliveriesByRunParams{AccountID: accountID, RunID: f.RunID,
				Since: f.Since, Until: f.Until, Status: status, EventType: eventType, JobID: jobID})
		}
	case f.JobID != "":
		p := dbq.SearchDeliveriesByJobParams{AccountID: accountID, JobID: f.JobID, Since: f.Since, Until: f.Until,
			Status: status, EventType: eventType, RowLimit: limit, RowOffset: offset}
		var list []dbq.SearchDeliveriesByJobRow
		if list, err = s.q.SearchDeliveriesByJob(ctx, p); err == nil {
			rows = convertRows(list, func(r dbq.SearchDeliveriesByJobRow) dbq.SearchDeliveriesRow { return dbq.SearchDeliveriesRow(r) })
			total, err = s.q.CountSearchDeliveriesByJob(ctx, dbq.CountSearchDeliveriesByJobParams{AccountID: accountID, JobID: f.JobID,
				Since: f.Since, Until: f.Until, Status: status, EventType: eventType})
		}
	default:
		p := dbq.SearchDeliveriesParams{AccountID: accountID, Since: f.Since, Until: f.Until,
			Status: status, EventType: eventType, RowLimit: limit, RowOffset: offset}
		if rows, err = s.q.SearchDeliveries(ctx, p); err == nil {
			total, err = s.q.CountSearchDeliveries(ctx, dbq.CountSearchDeliveriesParams{AccountID: accountID,
				Since: f.Since, Until: f.Until, Status: status, EventType: eventType})
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("search deliveries of account %d: %w", accountID, err)
	}
	out := make([]Delivery, 0, len(rows))
	for _, r := range rows {
		out = append(out, Delivery{
			ID: r.ID, SubscriptionID: r.SubscriptionID, EventID: r.EventID, EventType: r.EventType,
			JobID: r.JobID, RunID: r.RunID, IsTest: r.IsTest, RedeliveryOf: deref(r.RedeliveryOf),
			Status: r.Status, AttemptCount: int(r.AttemptCount), LastStatusCode: int(r.LastStatusCode),
			LastError: r.LastError, WorkflowID: r.WorkflowID, WorkflowRunID: r.WorkflowRunID,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CompletedAt: r.CompletedAt,
		})
	}
	return out, total, nil
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// convertRows maps the search queries' row types, which sqlc generates
// once per query with the same fields, to one.
func convertRows[R any](rows []R, conv func(R) dbq.SearchDeliveriesRow) []dbq.SearchDeliveriesRow {
	out := make([]dbq.SearchDeliveriesRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, conv(r))
	}
	return out
}
