package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestReleaseClaims_OnlyUnderTheClaimsOwnLease: a release that comes after
// its claim's lease ended and a later claim took the delivery touches
// nothing (on 564477e it ended the later claim's live lease and uncounted
// its attempt: the delivery was sent twice with one attempt number); the
// later claim's own release gives the delivery back.
func TestReleaseClaims_OnlyUnderTheClaimsOwnLease(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "OwnLane", true: "Shard"}[shared], func(t *testing.T) {
			f := newFixture(t)
			sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
			if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_1", "1")}); err != nil {
				t.Fatal(err)
			}
			claim := func() deliveries.Claimed {
				t.Helper()
				var got []deliveries.Claimed
				if shared {
					page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 10,
						PerWebhook: 10, Limit: 10, Lease: time.Minute, WorkflowID: "s"})
					if err != nil {
						t.Fatal(err)
					}
					got = page.Claimed
				} else {
					var err error
					if got, err = f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "w"}); err != nil {
						t.Fatal(err)
					}
				}
				if len(got) != 1 || got[0].LeasedUntil.IsZero() {
					t.Fatalf("claimed %+v, want the delivery with its lease", got)
				}
				return got[0]
			}
			first := claim()
			if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET leased_until = now() - interval '1 second' WHERE id = $1`, first.ID); err != nil {
				t.Fatal(err)
			}
			second := claim()
			if second.Attempt != 2 {
				t.Fatalf("second claim is attempt %d, want 2", second.Attempt)
			}
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{first.Lease()}); err != nil || n != 0 {
				t.Fatalf("late release of the first claim: %d released (err %v), want none", n, err)
			}
			var count int
			var leased bool
			read := func() {
				t.Helper()
				if err := f.pool.QueryRow(t.Context(), `SELECT attempt_count, COALESCE(leased_until > now(), false) FROM webhook_deliveries WHERE id = $1`,
					first.ID).Scan(&count, &leased); err != nil {
					t.Fatal(err)
				}
			}
			if read(); count != 2 || !leased {
				t.Fatalf("after the late release: %d attempts counted, leased %v; want the second claim's 2 and its lease", count, leased)
			}
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{second.Lease()}); err != nil || n != 1 {
				t.Fatalf("release of the second claim: %d released (err %v), want 1", n, err)
			}
			if read(); count != 1 || leased {
				t.Errorf("after its own release: %d attempts counted, leased %v; want 1 and no lease", count, leased)
			}
		})
	}
}

// TestEndPending_LeavesAnAttemptInFlightToItsRecord: ending a deactivated
// webhook's deliveries leaves the one whose attempt is in flight, and
// its receiver's 2xx is recorded as succeeded (on 564477e it was ended
// skipped under the attempt, its 2xx dropped, and a replay of skipped
// deliveries sent it again).
func TestEndPending_LeavesAnAttemptInFlightToItsRecord(t *testing.T) {
	f, sub, claimed := newInFlightFixture(t)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_2", "1")}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.EndPending(t.Context(), sub.ID, deliveries.StatusSkipped, "the webhook was inactive"); err != nil || n != 1 {
		t.Fatalf("ended %d (err %v), want only the delivery not in flight", n, err)
	}
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: claimed[0].ID, SubscriptionID: sub.ID,
		AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, claimed[0].ID)
	if err != nil || d.Status != deliveries.StatusSucceeded {
		t.Errorf("the in-flight delivery is %q (err %v), want succeeded as its receiver answered", d.Status, err)
	}
}

// TestPurge_KeepsWhatIsStillPending: retention deletes final delivery
// records older than the cutoff and their events, never a delivery still
// pending (a paused or held webhook's) nor its event, whatever their age
// (on 564477e both went by age alone).
func TestPurge_KeepsWhatIsStillPending(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_done", "1"), f.event("wev_pending", "1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL, completed_at = now()
		WHERE event_id = 'wev_done'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET route = 'paused' WHERE event_id = 'wev_pending'`); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.Purge(t.Context(), time.Now().Add(time.Hour), 100); err != nil || n != 2 {
		t.Fatalf("purged %d rows (err %v), want the final delivery and its event", n, err)
	}
	var deliveriesLeft, eventsLeft int
	if err := f.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND event_id = 'wev_pending'),
		(SELECT count(*) FROM webhook_events WHERE id = 'wev_pending')`, sub.ID).Scan(&deliveriesLeft, &eventsLeft); err != nil {
		t.Fatal(err)
	}
	if deliveriesLeft != 1 || eventsLeft != 1 {
		t.Errorf("after the purge: %d pending deliveries and %d of their events left, want both kept", deliveriesLeft, eventsLeft)
	}
}

// TestFeedPage_NeverFixesABodyUnderAnAttemptInFlight: the feed does not fix
// the body of a delivery whose first attempt is in flight (it sends the
// body its claim built, with the webhook's name as the claim read it): the
// page stops before it, and once the attempt is recorded the feed shows
// the body that was sent (on 564477e the feed fixed a body with the new
// name while the attempt sent the old one: one delivery id, two bodies).
func TestFeedPage_NeverFixesABodyUnderAnAttemptInFlight(t *testing.T) {
	f, sub, claimed := newInFlightFixture(t)
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET name = 'renamed' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	w, err := f.store.FeedWebhook(t.Context(), f.account.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, err := f.store.FeedPage(t.Context(), w, 0, 10)
	if err != nil || len(page) != 0 {
		t.Fatalf("feed page of %d (err %v) while the first attempt is in flight, want it to stop before that delivery", len(page), err)
	}
	sent := []byte(`{"as":"sent by the attempt"}`)
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: claimed[0].ID, SubscriptionID: sub.ID,
		AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded, Payload: sent}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	page, err = f.store.FeedPage(t.Context(), w, 0, 10)
	if err != nil || len(page) != 1 || string(page[0].Body) != string(sent) {
		t.Fatalf("feed page %+v (err %v), want the body the attempt sent", page, err)
	}
}

// newInFlightFixture is a fixture with a webhook whose one delivery is
// claimed by its lane (its attempt in flight).
func newInFlightFixture(t *testing.T) (*fixture, webhooks.Subscription, []deliveries.Claimed) {
	t.Helper()
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_1", "1")}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d (err %v), want 1", len(claimed), err)
	}
	return f, sub, claimed
}
