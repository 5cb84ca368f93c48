package deliveries_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// nextAttemptAt is when the delivery of eventID is due, as stored.
func (f *fixture) nextAttemptAt(t *testing.T, eventID string) time.Time {
	t.Helper()
	var at time.Time
	if err := f.pool.QueryRow(t.Context(), "SELECT next_attempt_at FROM webhook_deliveries WHERE event_id = $1", eventID).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

func (f *fixture) runEvent(id, eventType, runID string) deliveries.NewEvent {
	return deliveries.NewEvent{ID: id, AccountID: f.account.ID, Type: eventType, JobID: "1", RunID: runID,
		Data: webhooks.RunData{JobID: "1"}, ToolName: "dbt"}
}

// TestOrder_CompletedWaitsForItsRunsStarted: in one claim, a run's
// completed is not taken while its started is pending (it is deferred to
// when the started is due again), another run's completed is; once the
// started is final, the completed goes. Both claims (a webhook's own lane
// and its shard) keep the order.
func TestOrder_CompletedWaitsForItsRunsStarted(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "OwnLane", true: "Shard"}[shared], func(t *testing.T) {
			f := newFixture(t)
			sub := f.subscribe(t, []string{webhooks.EventRunStarted, webhooks.EventRunCompleted}, nil)
			if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{
				f.runEvent("wev_s1", webhooks.EventRunStarted, "r1"),
				f.runEvent("wev_c1", webhooks.EventRunCompleted, "r1"),
				f.runEvent("wev_c2", webhooks.EventRunCompleted, "r2"),
			}); err != nil {
				t.Fatal(err)
			}
			claim := func() []deliveries.Claimed {
				t.Helper()
				if shared {
					page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 10,
						PerWebhook: 10, Limit: 10, Lease: time.Minute, WorkflowID: "s"})
					if err != nil {
						t.Fatal(err)
					}
					return page.Claimed
				}
				got, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "w"})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			types := func(cs []deliveries.Claimed) map[string]bool {
				m := map[string]bool{}
				for _, c := range cs {
					m[c.EventID] = true
				}
				return m
			}
			first := claim()
			if shared {
				// A shard takes a run's completed with its started, the
				// started first: the round sends the completed only after
				// the started succeeded (activities' page order). Give it
				// back as a round does when the started did not succeed.
				got := types(first)
				if len(first) != 3 || first[0].EventID != "wev_s1" && first[1].EventID != "wev_s1" {
					t.Fatalf("shard's first claim %v, want all three, r1's started before its completed", got)
				}
				var back []deliveries.Lease
				for i, c := range first {
					if c.EventID == "wev_s1" {
						for _, later := range first[i+1:] {
							if later.EventID == "wev_c1" {
								back = append(back, later.Lease())
							}
						}
					}
				}
				if len(back) != 1 {
					t.Fatalf("r1's completed is not after its started in the page: %v", got)
				}
				if n, err := f.store.ReleaseClaims(t.Context(), back); err != nil || n != 1 {
					t.Fatal(err)
				}
				first = slices.DeleteFunc(first, func(c deliveries.Claimed) bool { return c.EventID == "wev_c1" })
			}
			if got := types(first); len(first) != 2 || !got["wev_s1"] || !got["wev_c2"] {
				t.Fatalf("first claim %v, want r1's started and r2's completed (r1's completed waits)", got)
			}
			dueBefore := f.nextAttemptAt(t, "wev_c1")
			if again := claim(); len(again) != 0 {
				t.Fatalf("claimed %v while r1's started is in flight", types(again))
			}
			if shared {
				// The claim deferred it: due again no sooner than a moment
				// (200 ms) after the claim, which came after it was due.
				if after := f.nextAttemptAt(t, "wev_c1"); after.Sub(dueBefore) < 200*time.Millisecond {
					t.Errorf("r1's completed due at %v after the claim, %v before: not deferred", after, dueBefore)
				}
			}
			var started deliveries.Claimed
			for _, c := range first {
				if c.EventID == "wev_s1" {
					started = c
				}
			}
			if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{SubscriptionID: sub.ID, DeliveryID: started.ID,
				AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}, deliveries.RecordPolicy{}); err != nil {
				t.Fatal(err)
			}
			// The deferral lasts a moment at least.
			var next []deliveries.Claimed
			for range 50 {
				if next = claim(); len(next) > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(next) != 1 || next[0].EventID != "wev_c1" {
				t.Fatalf("after the started succeeded: claimed %v, want r1's completed", types(next))
			}
			d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, next[0].ID)
			if err != nil || d.OrderReleasedAt != nil {
				t.Errorf("in-order delivery %+v (err %v): released out of order", d, err)
			}
		})
	}
}

// TestOrder_GoesAnywayAfterTheBound: a completed whose started stays
// pending past the bound waits only until the bound (on 564477e it waited
// until its started was due again: up to 2 h 50 min under the default
// retries), then goes, and its record says it went out of order.
func TestOrder_GoesAnywayAfterTheBound(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunStarted, webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{
		f.runEvent("wev_s", webhooks.EventRunStarted, "r"), f.runEvent("wev_c", webhooks.EventRunCompleted, "r"),
	}); err != nil {
		t.Fatal(err)
	}
	// The started fails and waits an hour; the completed was accepted 2s ago.
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour',
		created_at = now() - interval '2 seconds' WHERE event_id = 'wev_s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET created_at = now() - interval '2 seconds' WHERE event_id = 'wev_c'`); err != nil {
		t.Fatal(err)
	}
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "w", OrderMaxWait: time.Minute}
	if got, err := f.store.ClaimDue(t.Context(), claim); err != nil || len(got) != 0 {
		t.Fatalf("within the bound: claimed %d (err %v), want the completed to wait", len(got), err)
	}
	var due time.Time
	if err := f.pool.QueryRow(t.Context(), `SELECT next_attempt_at FROM webhook_deliveries WHERE event_id = 'wev_c'`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	// The started is due in an hour, past the bound: the completed waits
	// only until the bound (accepted 2 s ago, so about 58 s from now).
	if in := time.Until(due); in < 50*time.Second || in > time.Minute {
		t.Errorf("the waiting completed is due in %s, want at the bound (about 58s), not when its started is (1h)", in)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE event_id = 'wev_c'`); err != nil {
		t.Fatal(err)
	}
	claim.OrderMaxWait = time.Second
	got, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(got) != 1 || got[0].EventID != "wev_c" {
		t.Fatalf("past the bound: claimed %+v (err %v), want the completed", got, err)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, got[0].ID)
	if err != nil || d.OrderReleasedAt == nil {
		t.Errorf("record %+v (err %v), want order_released_at set", d, err)
	}
}

func TestOrderRuns_StartedGoesFirstInAPage(t *testing.T) {
	c := func(id, eventType, run string) deliveries.Claimed {
		return deliveries.Claimed{ID: id, EventType: eventType, RunID: run, Webhook: deliveries.WebhookTarget{ID: "wsu_a"}}
	}
	page := []deliveries.Claimed{
		c("c1", webhooks.EventRunCompleted, "r1"), c("x", webhooks.EventRunCompleted, "r2"),
		c("e1", webhooks.EventRunErrored, "r1"), c("s1", webhooks.EventRunStarted, "r1"), c("s3", webhooks.EventRunStarted, "r3"),
	}
	deliveries.OrderRuns(page)
	var got []string
	for _, p := range page {
		got = append(got, p.ID)
	}
	if want := []string{"s1", "c1", "x", "e1", "s3"}; !slices.Equal(got, want) {
		t.Errorf("page order %v, want %v", got, want)
	}
}

// TestOrder_AStartedLockedByAnotherNeverLetsItsCompletedGoFirst: a shard's
// claim that finds a run's started and completed both due, the started's
// row locked by another transaction (a late record, a body being fixed),
// takes neither: on 564477e SKIP LOCKED passed the started over and the
// completed, let through because its started was in the page, went first.
func TestOrder_AStartedLockedByAnotherNeverLetsItsCompletedGoFirst(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunStarted, webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{
		f.runEvent("wev_s", webhooks.EventRunStarted, "r"), f.runEvent("wev_c", webhooks.EventRunCompleted, "r"),
	}); err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), `SELECT id FROM webhook_deliveries WHERE event_id = 'wev_s' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	claim := deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 10, PerWebhook: 10, Limit: 10, Lease: time.Minute, WorkflowID: "s"}
	page, err := f.store.ClaimShared(t.Context(), claim)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Claimed) != 0 {
		t.Fatalf("claimed %s while the run's started was locked by another; want nothing", page.Claimed[0].EventID)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	page, err = f.store.ClaimShared(t.Context(), claim)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Claimed) != 2 || page.Claimed[0].EventID != "wev_s" {
		t.Fatalf("once the lock is gone, claimed %d, want both with the started first", len(page.Claimed))
	}
}
