package deliveries_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestRecordAttempts_TheFailureStreakFollowsAnswerOrder: a webhook's failed
// deliveries in a row and failing_since follow the order its receiver
// answered in, however the outcomes were grouped and in whatever order the
// groups were written (on 564477e they followed the writes: 400, 400, then
// 200 left one failure and a failing_since after the last success).
func TestRecordAttempts_TheFailureStreakFollowsAnswerOrder(t *testing.T) {
	const S, F = deliveries.StatusSucceeded, deliveries.StatusFailed
	tests := []struct {
		name    string
		answers []string // each delivery's final outcome, in answer order
		writes  [][]int  // groups of answer indexes, in write order
		want    int
		since   int // index of the answer failing_since is, -1: none
	}{
		{"InOrder", []string{F, F, S}, [][]int{{0}, {1}, {2}}, 0, -1},
		{"AFailureWrittenAfterALaterSuccess", []string{F, F, S}, [][]int{{0}, {2}, {1}}, 0, -1},
		{"ASuccessWrittenAfterLaterFailures", []string{S, F, S, F, F}, [][]int{{3}, {0, 1}, {4}, {2}}, 2, 3},
		{"OneGroupOutOfOrder", []string{S, F, S, F, F}, [][]int{{4, 2, 0, 3, 1}}, 2, 3},
		{"FailuresOnly", []string{F, F, F}, [][]int{{2}, {0, 1}}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			ids := make([]string, len(tt.answers))
			for i := range tt.answers {
				ev := fmt.Sprintf("wev_%d", i)
				if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event(ev, "1")}); err != nil {
					t.Fatal(err)
				}
				ids[i] = testenv.DeliveryID(t, f.pool, ev, sub.ID)
			}
			answeredAt := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second).Add(200 * time.Millisecond) }
			for _, group := range tt.writes {
				var recs []deliveries.AttemptRecord
				for _, i := range group {
					code := 200
					if tt.answers[i] == F {
						code = 400
					}
					recs = append(recs, deliveries.AttemptRecord{DeliveryID: ids[i], SubscriptionID: sub.ID, AttemptNumber: 1,
						StartedAt: base.Add(time.Duration(i) * time.Second), Duration: 200 * time.Millisecond,
						StatusCode: code, Status: tt.answers[i]})
				}
				if _, err := f.store.RecordAttempts(t.Context(), recs, deliveries.RecordPolicy{}); err != nil {
					t.Fatal(err)
				}
			}
			h, err := f.store.Health(t.Context(), f.account.ID, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if h.FailedInARow != tt.want {
				t.Errorf("failed in a row %d, want %d", h.FailedInARow, tt.want)
			}
			switch {
			case tt.since < 0 && h.FailingSince != nil:
				t.Errorf("failing since %s, want not failing", h.FailingSince)
			case tt.since >= 0 && (h.FailingSince == nil || !h.FailingSince.Equal(answeredAt(tt.since))):
				t.Errorf("failing since %v, want %s (answer %d)", h.FailingSince, answeredAt(tt.since), tt.since)
			}
		})
	}
}

// TestRecordAttempts_TheBreakerFollowsSendOrder: outages sent before the
// receiver's latest answer and written after it do not open the breaker
// (on 564477e they were counted in write order and opened it on a
// receiver that was answering).
func TestRecordAttempts_TheBreakerFollowsSendOrder(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	var ids []string
	for i := range 3 {
		ev := fmt.Sprintf("wev_%d", i)
		if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event(ev, "1")}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, testenv.DeliveryID(t, f.pool, ev, sub.ID))
	}
	base := time.Now().Add(-time.Minute)
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 2, ProbeFirst: time.Second, ProbeMax: time.Minute}}
	write := func(recs ...deliveries.AttemptRecord) {
		t.Helper()
		if _, err := f.store.RecordAttempts(t.Context(), recs, policy); err != nil {
			t.Fatal(err)
		}
	}
	outage := func(i int) deliveries.AttemptRecord {
		return deliveries.AttemptRecord{DeliveryID: ids[i], SubscriptionID: sub.ID, AttemptNumber: 1, StartedAt: base.Add(time.Duration(i) * time.Second),
			StatusCode: 503, ErrorKind: deliveries.KindHTTPStatus, Status: deliveries.StatusRetrying, RetryIn: time.Hour}
	}
	write(deliveries.AttemptRecord{DeliveryID: ids[2], SubscriptionID: sub.ID, AttemptNumber: 1, StartedAt: base.Add(2 * time.Second),
		StatusCode: 200, Status: deliveries.StatusSucceeded})
	write(outage(0), outage(1))
	b, err := f.store.Breaker(t.Context(), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Open {
		t.Errorf("breaker opened by two outages sent before the receiver's latest answer")
	}
}
