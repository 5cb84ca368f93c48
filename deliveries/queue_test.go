package deliveries_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// queueDiffers counts the rows in which webhook_delivery_queue and the
// records not final disagree (migration 00039): each delivery whose
// next_attempt_at is set has exactly one queue row, with the record's due
// state and its webhook's lane key (migration 00041), and the queue holds
// nothing else.
func (f *fixture) queueDiffers(t *testing.T) int {
	t.Helper()
	var n int
	err := f.pool.QueryRow(t.Context(), `
		WITH rec AS (
			SELECT d.id, d.subscription_id, d.account_id, s.lane_key, d.route, d.run_id, d.event_type, d.created_at,
				d.next_attempt_at, d.leased_until, d.workflow_id
			FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
			WHERE d.next_attempt_at IS NOT NULL
		), q AS (
			SELECT id, subscription_id, account_id, lane_key, route, run_id, event_type, created_at,
				next_attempt_at, leased_until, workflow_id
			FROM webhook_delivery_queue
		)
		SELECT (SELECT count(*) FROM (SELECT * FROM rec EXCEPT SELECT * FROM q) a)
		     + (SELECT count(*) FROM (SELECT * FROM q EXCEPT SELECT * FROM rec) b)`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) queued(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_delivery_queue`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQueue_MirrorsTheRecords: the queue follows every write of the
// records' due state through the store's own paths (ingestion, a claim's
// lease, a retry's new due time, a success, a route change, ending a
// webhook's deliveries) and records deleted.
func TestQueue_MirrorsTheRecords(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil) // its 3 deliveries stay until deleted
	check := func(step string, queued int) {
		t.Helper()
		if d := f.queueDiffers(t); d != 0 {
			t.Fatalf("%s: %d rows differ between the queue and the records not final", step, d)
		}
		if n := f.queued(t); n != queued {
			t.Fatalf("%s: %d rows queued, want %d", step, n, queued)
		}
	}
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{
		f.event("wev_q1", "1"), f.event("wev_q2", "1"), f.event("wev_q3", "1")}); err != nil {
		t.Fatal(err)
	}
	check("ingested", 6)

	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 2, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: "run1"}
	got, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(got) != 2 {
		t.Fatalf("claimed %d (err %v), want 2", len(got), err)
	}
	check("claimed", 6)

	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{
		{SubscriptionID: sub.ID, DeliveryID: got[0].ID, AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded},
		{SubscriptionID: sub.ID, DeliveryID: got[1].ID, AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 503, ErrorKind: "http_status",
			Status: deliveries.StatusRetrying, RetryIn: time.Hour},
	}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	check("recorded a success and a retry", 5)

	if _, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{sub.ID},
		From: []string{deliveries.RouteShared}, To: deliveries.RoutePaused, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	var paused int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_delivery_queue WHERE route = 'paused'`).Scan(&paused); err != nil || paused != 2 {
		t.Fatalf("%d queue rows paused (err %v), want the webhook's 2", paused, err)
	}
	check("paused", 5)

	if n, err := f.store.EndPending(t.Context(), sub.ID, deliveries.StatusCancelled, "the webhook was deleted"); err != nil || n != 2 {
		t.Fatalf("ended %d (err %v), want 2", n, err)
	}
	check("ended the webhook's deliveries", 3)

	// No path of the service deletes records but retention's partition
	// drops (of final deliveries only); an operator's DELETE is mirrored all
	// the same.
	if _, err := f.pool.Exec(t.Context(), `DELETE FROM webhook_deliveries WHERE account_id = $1`, f.account.ID); err != nil {
		t.Fatal(err)
	}
	check("deleted the records", 0)
}

// TestQueue_RecordsAreUpdatedWithoutTheirIndexes: no index of
// webhook_deliveries names a column that a claim or a record changes, so
// both are HOT updates when the row's page has room (migration 00039): a
// new index on one of them would write every index again for every
// attempt.
func TestQueue_RecordsAreUpdatedWithoutTheirIndexes(t *testing.T) {
	f := newFixture(t)
	changed := []string{
		// RecordAttempts
		"status", "attempt_count", "last_status_code", "last_error", "retry_delay_ms", "next_attempt_at",
		"leased_until", "payload", "body_name", "completed_at", "updated_at",
		// ClaimShared, ClaimDueDeliveries, ClaimProbe, ReleaseClaims
		"lost_claims", "claim_reused", "workflow_id", "workflow_run_id", "order_released_at", "max_attempts",
		// route changes, holds and releases
		"route",
	}
	rows, err := f.pool.Query(t.Context(), `SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i WHERE i.indrelid = 'webhook_deliveries'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	indexes := 0
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		indexes++
		for _, col := range changed {
			if regexp.MustCompile(`\b` + col + `\b`).MatchString(def) {
				t.Errorf("index %s names %s, which claims or records change: %s", name, col, def)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if indexes < 5 {
		t.Fatalf("read %d indexes of webhook_deliveries; the test reads the wrong table", indexes)
	}
}
