package activities

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDeliverShardRound_WakesItsOwnRunWhenWorkIsDueAtOnce: a round that
// ends with deliveries due at once (its claim window ended while traffic
// kept coming) signals its own run, so the next round starts as soon as
// this one's workflow task completes rather than on the timer between
// rounds, which the Temporal server fires up to a second late; a round
// that ends with nothing due does not.
func TestDeliverShardRound_WakesItsOwnRunWhenWorkIsDueAtOnce(t *testing.T) {
	f := newRateFixture(t, nil)
	var more atomic.Bool // each answer brings another event while set
	more.Store(true)
	var n atomic.Int64
	ingest := func() {
		id := fmt.Sprintf("wev_%d", n.Add(1))
		if _, _, err := f.store.IngestEvents(context.Background(), []deliveries.NewEvent{{ID: id, AccountID: f.account.ID,
			Type: webhooks.EventRunCompleted, JobID: "1", RunID: id, Data: []byte(`{}`)}}); err != nil {
			t.Error(err)
		}
	}
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) {
		if more.Load() {
			time.Sleep(5 * time.Millisecond)
			ingest()
		}
		return 0, http.StatusNoContent
	})
	f.webhook(recv.srv.URL + "/traffic")
	ingest()
	in := ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"}
	res, err := f.acts.Rounds.DeliverShardRound(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	more.Store(false)
	if !res.Pending || res.NextDueIn > 0 || !slices.Equal(f.waker.runs, []string{"shard-0-of-1/r"}) {
		t.Fatalf("a round that ended with work due (pending %v, next in %s) woke %v, want its own run once", res.Pending, res.NextDueIn, f.waker.runs)
	}
	if res, err = f.acts.Rounds.DeliverShardRound(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if res.Pending || len(f.waker.runs) != 1 {
		t.Errorf("a round that ended with nothing due (pending %v) woke %v, want no more", res.Pending, f.waker.runs)
	}
}

// TestKeepPromise_ARoundThatEndsBeforeItsPromiseHasTheNextFollow: a round
// that stopped claiming before its promise ended (it claimed its limit)
// says work is due at once even when none is, so the next round follows
// at once and claims what is committed meanwhile (nobody woke the shard
// for it); once its promise has ended it says what is due.
func TestKeepPromise_ARoundThatEndsBeforeItsPromiseHasTheNextFollow(t *testing.T) {
	f := newRateFixture(t, nil)
	f.webhook("https://example.com/promised")
	in := ShardRoundInput{Shard: 0, Shards: 1}
	for _, tc := range []struct {
		name        string
		claimsUntil time.Time
		pending     bool
	}{
		{"promise holds", time.Now().Add(time.Minute), true},
		{"promise ended", time.Now().Add(-time.Millisecond), false},
		{"no promise", time.Time{}, false},
	} {
		next, pending, err := f.acts.Rounds.keepPromise(t.Context(), in, tc.claimsUntil)
		if err != nil || pending != tc.pending || (pending && next > 0) {
			t.Errorf("%s, nothing due: pending %v, next in %s (err %v); want pending %v at once", tc.name, pending, next, err, tc.pending)
		}
	}
}

// TestDeliverDue_WakesItsOwnRunWhenWorkIsDueAtOnce: a lane's round that
// ends with deliveries due at once (a slow lane's round takes at most its
// in-flight bound) signals its own run, as a shard's round does; the
// round that takes the rest and ends with nothing due does not.
func TestDeliverDue_WakesItsOwnRunWhenWorkIsDueAtOnce(t *testing.T) {
	f := newRateFixture(t, nil)
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	id := f.webhook(recv.srv.URL + "/lane")
	if _, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{id}, From: []string{deliveries.RouteShared},
		To: deliveries.RouteOwn, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // the fixture's in-flight bound is 4
		ev := fmt.Sprintf("wev_lane_%d", i)
		if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: ev, AccountID: f.account.ID,
			Type: webhooks.EventRunCompleted, JobID: "1", RunID: ev, Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	in := RoundInput{SubscriptionID: id, AccountID: f.account.ID, Slow: true, WorkflowID: "webhook/" + id, WorkflowRunID: "r"}
	res, err := f.acts.Rounds.DeliverDue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 4 || !res.Pending || res.NextDueIn > 0 || !slices.Equal(f.waker.runs, []string{"webhook/" + id + "/r"}) {
		t.Fatalf("%d outcomes, pending %v, next in %s; woke %v; want 4, the rest due at once, and its own run woken once",
			len(res.Outcomes), res.Pending, res.NextDueIn, f.waker.runs)
	}
	if res, err = f.acts.Rounds.DeliverDue(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 2 || res.Pending || len(f.waker.runs) != 1 {
		t.Errorf("%d outcomes, pending %v; woke %v; want the other 2, nothing pending and no more wake-ups", len(res.Outcomes), res.Pending, f.waker.runs)
	}
}
