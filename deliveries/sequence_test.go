package deliveries_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// sequences returns a webhook's delivery numbers by delivery id (0: none),
// originals and redeliveries alike.
func (f *fixture) sequences(t *testing.T, subscriptionID string) map[string]int64 {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `SELECT id, COALESCE(sequence, 0) FROM webhook_deliveries WHERE subscription_id = $1`, subscriptionID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// byKey is sequences by the key of each delivery's event and webhook (its
// id's last digits, DeliveryKey), for deliveries ingestion made: their ids
// also carry the second they were made, which a test cannot derive.
func byKey(byID map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(byID))
	for id, n := range byID {
		out[id[len(id)-webhooks.DeliveryIDKeyLen:]] = n
	}
	return out
}

// TestIngestEvents_NumbersEachWebhookWithoutGapUnderConcurrentSenders:
// 1,000 events over 3 webhooks (one for every job and type, one for two
// jobs' completions, one inactive: its skipped deliveries are numbered
// too), sent by 32 concurrent senders in batches of 1 to 20 with some
// events sent twice, give each webhook 1..n with no gap or repeat, n its
// matching events; each sender's events are numbered in the order it sent
// them (ingestion order).
func TestIngestEvents_NumbersEachWebhookWithoutGapUnderConcurrentSenders(t *testing.T) {
	f := newFixture(t)
	every := f.subscribe(t, webhooks.EventTypes, nil)
	twoJobs := f.subscribe(t, []string{webhooks.EventRunCompleted}, []int64{1, 2})
	inactive := f.subscribe(t, []string{webhooks.EventRunCompleted, webhooks.EventRunErrored}, nil)
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET active = false WHERE id = $1`, inactive.ID); err != nil {
		t.Fatal(err)
	}

	const events, senders = 1000, 32
	rng := rand.New(rand.NewPCG(1, 2))
	perSender := make([][]deliveries.NewEvent, senders)
	want := map[string]int{}
	for i := range events {
		ev := f.event(fmt.Sprintf("wev_seq%04d", i), fmt.Sprint(1+rng.IntN(4)))
		ev.Type = webhooks.EventTypes[rng.IntN(len(webhooks.EventTypes))]
		want[every.ID]++
		if ev.Type == webhooks.EventRunCompleted && (ev.JobID == "1" || ev.JobID == "2") {
			want[twoJobs.ID]++
		}
		if ev.Type != webhooks.EventRunStarted {
			want[inactive.ID]++
		}
		s := i % senders
		perSender[s] = append(perSender[s], ev)
		if rng.IntN(10) == 0 { // sent again later: a duplicate takes no number
			perSender[(s+1)%senders] = append(perSender[(s+1)%senders], ev)
		}
	}

	stored := make([][]string, senders) // per sender, the events it stored, in order
	var wg sync.WaitGroup
	for s := range senders {
		evs := perSender[s]
		batchRng := rand.New(rand.NewPCG(uint64(s), 3))
		wg.Go(func() {
			for len(evs) > 0 {
				n := min(1+batchRng.IntN(20), len(evs))
				res, _, err := f.store.IngestEvents(context.Background(), evs[:n])
				if err != nil {
					t.Errorf("sender %d: %v", s, err)
					return
				}
				for i, r := range res {
					if r.Stored {
						stored[s] = append(stored[s], evs[i].ID)
					}
				}
				evs = evs[n:]
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for _, sub := range []webhooks.Subscription{every, twoJobs, inactive} {
		byID := f.sequences(t, sub.ID)
		keyed := byKey(byID)
		got := make([]int64, 0, len(byID))
		for _, n := range byID {
			got = append(got, n)
		}
		slices.Sort(got)
		wantSeq := make([]int64, want[sub.ID])
		for i := range wantSeq {
			wantSeq[i] = int64(i + 1)
		}
		if !slices.Equal(got, wantSeq) {
			t.Errorf("webhook %s: %d deliveries numbered %v..., want 1..%d once each", sub.ID, len(got), got[:min(len(got), 10)], want[sub.ID])
		}
		for s, ids := range stored {
			var last int64
			for _, id := range ids {
				n, ok := keyed[deliveries.DeliveryKey(id, sub.ID)]
				if !ok {
					continue // not this webhook's
				}
				if n <= last {
					t.Errorf("webhook %s, sender %d: %s numbered %d after %d, want the order it was sent in", sub.ID, s, id, n, last)
				}
				last = n
			}
		}
	}
}

// TestSequence_ClaimsRedeliveriesAndTests: a claim carries the delivery's
// number; a redelivery and a replay carry their original's; a test
// delivery has none, and the webhook's next event takes the next number.
func TestSequence_ClaimsRedeliveriesAndTests(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_s1", "1"), f.event("wev_s2", "1")}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claimed %d (err %v), want 2", len(claimed), err)
	}
	for _, c := range claimed {
		want := map[string]int64{"wev_s1": 1, "wev_s2": 2}[c.EventID]
		if c.Sequence != want {
			t.Errorf("claimed %s with sequence %d, want %d", c.EventID, c.Sequence, want)
		}
	}
	original := testenv.DeliveryID(t, f.pool, "wev_s2", sub.ID)
	now := time.Now()
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{
		{SubscriptionID: sub.ID, DeliveryID: original, AttemptNumber: 1, StartedAt: now, StatusCode: 500, Status: deliveries.StatusFailed, Body: deliveries.FixedBody{Payload: []byte("b")}},
	}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	redelivery, _, err := f.store.CreateRedelivery(t.Context(), f.account.ID, sub.ID, original)
	if err != nil {
		t.Fatal(err)
	}
	replay, _, err := f.store.CreateReplay(t.Context(), f.account.ID, sub.ID, now.Add(-time.Hour), nil, []string{deliveries.StatusFailed})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.store.ReplayNextBatch(t.Context(), replay, 10); err != nil {
		t.Fatal(err)
	}
	test := webhooks.NewDeliveryID()
	if err := f.store.RecordTest(t.Context(), deliveries.TestRecord{DeliveryID: test, AccountID: f.account.ID, SubscriptionID: sub.ID,
		EventID: "wev_test", EventType: webhooks.EventRunCompleted, Payload: []byte("t"), WorkflowID: "test/" + test,
		Attempt: deliveries.AttemptRecord{StartedAt: now, StatusCode: 200, Status: deliveries.StatusSucceeded}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_s3", "1")}); err != nil {
		t.Fatal(err)
	}

	byID := f.sequences(t, sub.ID)
	if byID[redelivery] != 2 {
		t.Errorf("redelivery numbered %d, want its original's 2", byID[redelivery])
	}
	replayed := 0 // the replay resends the one failed delivery, the original
	for id, n := range byID {
		if id != original && id != redelivery && n == 2 {
			replayed++
		}
	}
	if replayed != 1 {
		t.Errorf("%d replayed deliveries carry the original's number 2, want 1: %v", replayed, byID)
	}
	if n, ok := byID[test]; !ok || n != 0 {
		t.Errorf("test delivery numbered %d (found %v), want none", n, ok)
	}
	if n := byID[testenv.DeliveryID(t, f.pool, "wev_s3", sub.ID)]; n != 3 {
		t.Errorf("the next event numbered %d, want 3", n)
	}
}

// TestSetSequenceHeader: a numbered delivery's attempts carry
// webhook-sequence; a test delivery's carry none.
func TestSetSequenceHeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sequence int64
		want     []string
	}{
		{"Numbered", 41, []string{"41"}},
		{"Test", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			deliveries.Claimed{Sequence: tc.sequence}.SetSequenceHeader(h)
			if got := h.Values(webhooks.HeaderSequence); !slices.Equal(got, tc.want) {
				t.Errorf("webhook-sequence %q, want %q", got, tc.want)
			}
		})
	}
}
