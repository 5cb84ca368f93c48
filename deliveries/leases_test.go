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
