package activities

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/inflight"
)

// TestDeliverShardRound_StartsFromTheLimitsItWasGiven: a round on a
// worker that has never sent to a destination starts it at the limit the
// shard's earlier rounds learned (ShardRoundInput.Learned), not at the
// initial probe of 16 (growing from there by one a round trip, as it
// would on the worker that learned it), and reports the destination's limit as it leaves
// it for the rounds after it.
func TestDeliverShardRound_StartsFromTheLimitsItWasGiven(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 100 * time.Millisecond, http.StatusNoContent })
	tests := []struct {
		name        string
		learned     int // the destination's learned limit; 0: none
		wantAtMost  int
		wantAtLeast int
	}{
		// From 3, one more a round trip (24 deliveries: 3, 4, 5, 6, 6).
		{"learned", 3, 7, 1},
		// A destination not seen is probed with one webhook's initial 16.
		{"not learned", 0, 16, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRateFixture(t, nil)
			limits := inflight.New(inflight.Options{})
			f.acts = New(Deps{
				Store: f.store, Box: testBox(t), HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler),
				Waker: f.waker, Schedule: deliveries.Schedule{Initial: time.Second, Coefficient: 2, Max: time.Minute},
				AttemptTimeout: 5 * time.Second, Settings: SettingsDeps{Source: f.settings}, InFlight: limits,
				Tuning: Tuning{Shards: 1, PageSize: 50, MaxInFlight: 64, Linger: 20 * time.Millisecond, Patience: 2 * time.Second},
			})
			path := "/" + fmt.Sprint(tt.learned)
			url := recv.srv.URL + path
			f.webhook(url)
			for i := range 24 {
				ev := fmt.Sprintf("wev_%d", i)
				if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: ev, AccountID: f.account.ID,
					Type: webhooks.EventRunCompleted, JobID: "1", RunID: ev}}); err != nil {
					t.Fatal(err)
				}
			}
			dest := deliveries.DestinationKey(f.account.ID, url)
			in := ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"}
			if tt.learned > 0 {
				in.Learned = LearnedLimits{Destinations: []DestinationLimit{{Destination: dest, Limit: tt.learned}}}
			}
			res, err := f.acts.Rounds.DeliverShardRound(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := recv.max(path); got > tt.wantAtMost || got < tt.wantAtLeast {
				t.Errorf("%d in flight at most, want %d to %d", got, tt.wantAtLeast, tt.wantAtMost)
			}
			if len(res.Outcomes) == 0 {
				t.Fatal("the round delivered nothing")
			}
			if tt.learned == 0 {
				return
			}
			var reported *DestinationLimit
			for i := range res.Destinations {
				if res.Destinations[i].Destination == dest {
					reported = &res.Destinations[i]
				}
			}
			snap, _ := limits.DestinationSnapshot(dest)
			if reported == nil || reported.Limit != snap.Limit || reported.Limit >= limits.InitialDestination() {
				t.Errorf("reported %+v of %+v, want the destination at its limit now (%d), below the initial %d",
					reported, res.Destinations, snap.Limit, limits.InitialDestination())
			}
		})
	}
}
