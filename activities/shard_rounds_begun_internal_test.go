package activities

import (
	"net/http"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDeliverShardRound_CountsItselfBegun: every round of a shard counts
// itself begun for that shard (the API signals a shard once a round:
// dispatch.Waker.FollowRoundStarts), with work or without; a round of a
// shard the workers do not run stops without counting.
func TestDeliverShardRound_CountsItselfBegun(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	f := newRateFixture(t, nil)
	f.webhook(recv.srv.URL + "/a")
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	begun := func() int64 {
		t.Helper()
		n, err := f.store.ShardRoundsBegun(t.Context(), 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	in := ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"}
	res, err := f.acts.Rounds.DeliverShardRound(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 1 || begun() != 1 {
		t.Fatalf("a round delivered %d and counted %d rounds begun, want 1 and 1", len(res.Outcomes), begun())
	}
	if _, err := f.acts.Rounds.DeliverShardRound(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if n := begun(); n != 2 {
		t.Errorf("after a round with nothing due, %d rounds begun, want 2", n)
	}
	stopped, err := f.acts.Rounds.DeliverShardRound(t.Context(), ShardRoundInput{Shard: 0, Shards: 2, WorkflowID: "shard-0-of-2", WorkflowRunID: "r"})
	if err != nil || stopped.Stopped == "" {
		t.Fatalf("a round of another number of shards: %+v, %v; want it stopped", stopped, err)
	}
	if n, err := f.store.ShardRoundsBegun(t.Context(), 0, 2); err != nil || n != 0 {
		t.Errorf("the stopped round counted %d rounds begun (%v), want 0", n, err)
	}
}
