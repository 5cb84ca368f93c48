package deliveries_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// claimFunc claims the fixture's one delivery on a shard (shared) or on its
// webhook's own lane.
func claimFunc(t *testing.T, f *fixture, subID string, shared bool) func() deliveries.Claimed {
	return func() deliveries.Claimed {
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
			if got, err = f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: subID, Limit: 10, Lease: time.Minute, WorkflowID: "w"}); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 1 || got[0].LeasedUntil.IsZero() {
			t.Fatalf("claimed %+v, want the delivery with its lease", got)
		}
		return got[0]
	}
}

// loseClaim ends a claim's lease with neither a record nor a release, as
// a worker killed before it sent the attempt leaves it.
func loseClaim(t *testing.T, f *fixture, c deliveries.Claimed) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET leased_until = leased_until - interval '2 minutes' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
}

// leaseState reads a delivery's counted attempts and whether a claim holds
// it now.
func leaseState(t *testing.T, f *fixture, id string) (count int, leased bool) {
	t.Helper()
	if err := f.pool.QueryRow(t.Context(), `SELECT attempt_count, COALESCE(leased_until > now(), false) FROM webhook_deliveries WHERE id = $1`,
		id).Scan(&count, &leased); err != nil {
		t.Fatal(err)
	}
	return count, leased
}

// oneDelivery is a fixture with one webhook and one pending delivery, and
// the claim of it on a shard (shared) or on the webhook's own lane.
func oneDelivery(t *testing.T, shared bool) (*fixture, webhooks.Subscription, func() deliveries.Claimed) {
	t.Helper()
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_1", "1")}); err != nil {
		t.Fatal(err)
	}
	return f, sub, claimFunc(t, f, sub.ID, shared)
}

var claimPlaces = []struct {
	name   string
	shared bool
}{{"OwnLane", false}, {"Shard", true}}

// TestReleaseClaims_OnlyUnderTheClaimsOwnLease: a release that comes after
// its claim's lease ended and a later claim took the delivery touches
// nothing (on 564477e it ended the later claim's live lease and uncounted
// its attempt: the delivery was sent twice with one attempt number); the
// later claim's own release gives the delivery back.
func TestReleaseClaims_OnlyUnderTheClaimsOwnLease(t *testing.T) {
	for _, place := range claimPlaces {
		t.Run(place.name, func(t *testing.T) {
			f, _, claim := oneDelivery(t, place.shared)
			first := claim()
			loseClaim(t, f, first)
			second := claim()
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{first.Lease()}); err != nil || n != 0 {
				t.Fatalf("late release of the first claim: %d released (err %v), want none", n, err)
			}
			if count, leased := leaseState(t, f, first.ID); count != int(second.Attempt) || !leased {
				t.Fatalf("after the late release: %d attempts counted, leased %v; want the second claim's %d and its lease", count, leased, second.Attempt)
			}
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{second.Lease()}); err != nil || n != 1 {
				t.Fatalf("release of the second claim: %d released (err %v), want 1", n, err)
			}
			if _, leased := leaseState(t, f, first.ID); leased {
				t.Error("after its own release the delivery is still leased")
			}
		})
	}
}

// TestClaim_ALostClaimsAttemptIsNotSpent: a claim whose lease ended with
// neither a record nor a release (its worker killed before it sent) does
// not spend an attempt: the next claim sends under the same number, at
// most twice in a delivery's life, so one whose attempts crash their
// worker still ends. A reused claim's release leaves the number to reuse.
// (On 7b3b133 every lost claim counted: a delivery ended failed after five
// sends for six attempts.)
func TestClaim_ALostClaimsAttemptIsNotSpent(t *testing.T) {
	for _, place := range claimPlaces {
		t.Run(place.name, func(t *testing.T) {
			f, _, claim := oneDelivery(t, place.shared)
			var got []int32
			c := claim()
			got = append(got, c.Attempt)
			// Released (not lost): the number is given back whole.
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{c.Lease()}); err != nil || n != 1 {
				t.Fatalf("release: %d (err %v)", n, err)
			}
			c = claim()
			got = append(got, c.Attempt)
			for range 3 {
				loseClaim(t, f, c)
				c = claim()
				got = append(got, c.Attempt)
			}
			// The reused claim is released: the lost claim stays lost, so
			// the next claim reuses the number once more.
			if n, err := f.store.ReleaseClaims(t.Context(), []deliveries.Lease{c.Lease()}); err != nil || n != 1 {
				t.Fatalf("release of a reused claim: %d (err %v)", n, err)
			}
			c = claim()
			got = append(got, c.Attempt)
			want := []int32{1, 1, 1, 1, 2, 2}
			if !slices.Equal(got, want) {
				t.Errorf("attempt numbers of the claims: %v, want %v (released, lost, lost, lost: two reused, the third counted; a released reuse reused again)", got, want)
			}
		})
	}
}

// TestRecordAttempts_AStaleRecordLeavesALiveReusedClaimAlone: the record of
// a lost claim's attempt that arrives while a later claim holds the
// delivery under the same number (the lost one's number reused) writes its
// attempt row but does not end the live claim's lease; a success would.
func TestRecordAttempts_AStaleRecordLeavesALiveReusedClaimAlone(t *testing.T) {
	for _, place := range claimPlaces {
		t.Run(place.name, func(t *testing.T) {
			f, sub, claim := oneDelivery(t, place.shared)
			first := claim()
			loseClaim(t, f, first)
			second := claim()
			if second.Attempt != first.Attempt {
				t.Fatalf("second claim is attempt %d, want the lost claim's %d", second.Attempt, first.Attempt)
			}
			failed := func(c deliveries.Claimed) deliveries.AttemptRecord {
				return deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: sub.ID, AttemptNumber: c.Attempt,
					StartedAt: time.Now(), StatusCode: 500, ErrorKind: deliveries.KindHTTPStatus, ErrorMessage: "500",
					Status: deliveries.StatusRetrying, RetryIn: time.Minute, LeasedUntil: c.LeasedUntil}
			}
			if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{failed(first)}, deliveries.RecordPolicy{}); err != nil {
				t.Fatal(err)
			}
			if _, leased := leaseState(t, f, first.ID); !leased {
				t.Fatal("the lost claim's late failure ended the live claim's lease")
			}
			if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{failed(second)}, deliveries.RecordPolicy{}); err != nil {
				t.Fatal(err)
			}
			if count, leased := leaseState(t, f, first.ID); leased || count != int(second.Attempt) {
				t.Errorf("after the live claim's record: leased %v, %d attempts; want no lease, %d", leased, count, second.Attempt)
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

// TestFeedPage_NeverFixesABodyUnderAnAttemptInFlight: the feed does not fix
// the body of a delivery whose first attempt is in flight (it sends the
// body its claim built, with the webhook's name as the claim read it): the
// page stops before it, and once the attempt is recorded the feed shows
// the body that was sent (on 564477e the feed fixed a body with the new
// name while the attempt sent the old one: one delivery id, two bodies).
func TestFeedPage_NeverFixesABodyUnderAnAttemptInFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fixed func(sub webhooks.Subscription) deliveries.FixedBody
	}{
		{"its bytes", func(webhooks.Subscription) deliveries.FixedBody {
			return deliveries.FixedBody{Payload: []byte(`{"as":"sent by the attempt"}`)}
		}},
		// A spec body fixed by the name the claim read: the feed builds it
		// with that name, not the webhook's new one.
		{"the spec's by its name", func(sub webhooks.Subscription) deliveries.FixedBody { return deliveries.FixedBody{Name: sub.Name} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			fixed := tc.fixed(sub)
			if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: claimed[0].ID, SubscriptionID: sub.ID,
				AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded, Body: fixed}}, deliveries.RecordPolicy{}); err != nil {
				t.Fatal(err)
			}
			c := claimed[0]
			sent, err := fixed.Bytes(deliveries.EventBody{AccountID: f.account.ID, SubscriptionID: sub.ID, EventID: c.EventID,
				EventType: c.EventType, EventData: c.EventData, ToolName: c.EventToolName, AcceptedAt: c.EventAcceptedAt})
			if err != nil || bytes.Contains(sent, []byte("renamed")) {
				t.Fatalf("the body sent %s (err %v)", sent, err)
			}
			page, err = f.store.FeedPage(t.Context(), w, 0, 10)
			if err != nil || len(page) != 1 || string(page[0].Body) != string(sent) {
				t.Fatalf("feed page %+v (err %v), want the body the attempt sent: %s", page, err, sent)
			}
		})
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
