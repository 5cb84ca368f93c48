package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestClaim_RunIDsAndTraceParentsKeptAsBytes: an event keeps its
// traceparent as 26 bytes and gives it back to the claims as it was sent;
// a claim's workflow run id is kept as a 16-byte UUID. A traceparent or
// run id of another shape is kept as nothing, and never fails the rows
// beside it (migration 00040).
func TestClaim_RunIDsAndTraceParentsKeptAsBytes(t *testing.T) {
	const (
		traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		runID       = "5f0b2c4e-3d1a-4b7e-8c9d-0a1b2c3d4e5f"
	)
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	traced, odd := f.event("wev_traced", "1"), f.event("wev_odd", "1")
	traced.TraceParent, odd.TraceParent = traceParent, "01-not-a-traceparent"
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{traced, odd, f.event("wev_plain", "1")}); err != nil {
		t.Fatal(err)
	}
	// 26 bytes and a one-byte length (55 characters and one before).
	var size int
	if err := f.pool.QueryRow(t.Context(), `SELECT pg_column_size(trace_parent) FROM webhook_events WHERE id = 'wev_traced'`).Scan(&size); err != nil || size != 27 {
		t.Errorf("a traceparent takes %d bytes (err %v), want 27", size, err)
	}

	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 3, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: "not-a-uuid"}
	got, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d (err %v) under a run id that is not a UUID, want 3", len(got), err)
	}
	parents := map[string]string{}
	for _, c := range got {
		parents[c.EventID] = c.EventTraceParent
	}
	if parents["wev_traced"] != traceParent || parents["wev_odd"] != "" || parents["wev_plain"] != "" {
		t.Errorf("claimed traceparents %q, want %q for the traced event and none for the others", parents, traceParent)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, got[0].ID)
	if err != nil || d.WorkflowRunID != "" {
		t.Errorf("delivery claimed under a run id that is not a UUID shows %q (err %v), want \"\"", d.WorkflowRunID, err)
	}

	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_late", "1")}); err != nil {
		t.Fatal(err)
	}
	claim.WorkflowRunID = runID
	last, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(last) != 1 || last[0].EventID != "wev_late" {
		t.Fatalf("claimed %+v (err %v), want the late event's delivery", last, err)
	}
	if d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, last[0].ID); err != nil || d.WorkflowRunID != runID {
		t.Errorf("delivery shows run id %q (err %v), want %q", d.WorkflowRunID, err, runID)
	}
	if err := f.pool.QueryRow(t.Context(), `SELECT pg_column_size(workflow_run_id) FROM webhook_deliveries WHERE id = $1`, last[0].ID).Scan(&size); err != nil || size != 16 {
		t.Errorf("a run id takes %d bytes (err %v), want 16", size, err)
	}
}
