package worker_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
)

// A page of first attempts runs at once in one local activity, but never
// more attempts at a time than WORKER_MAX_CONCURRENT_DELIVERIES; each
// outcome comes back in order and is recorded.
func TestAttemptDeliveries_PageBoundedByMaxConcurrentDeliveries(t *testing.T) {
	e := newEnv(t, false, map[string]string{"WORKER_MAX_CONCURRENT_DELIVERIES": "2"})
	var mu sync.Mutex
	inFlight, most := 0, 0
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	ev := webhooks.NewID(webhooks.EventIDPrefix)
	var ins []deliveries.AttemptInput
	for i := range 5 {
		path := "/ok"
		if i == 3 {
			path = "/gone"
		}
		sub, _ := e.subscribe(rc.URL+path, allTypes, nil, true)
		ins = append(ins, deliveries.AttemptInput{
			DeliveryID: deliveries.DeliveryIDFor(deliveries.DeliveryWorkflowID(ev, sub.ID)), WorkflowID: deliveries.EventWorkflowID(ev),
			SubscriptionID: sub.ID, AccountID: e.account.ID, EventID: ev, EventType: webhooks.EventRunStarted,
			JobID: "3", Payload: []byte(`{"n":1}`), MaxAttempts: deliveries.MaxAttempts,
			AttemptTimeout: e.cfg.DeliveryTimeout, RetryAfterMax: e.cfg.DeliveryRetryAfterMax,
		})
	}
	val, err := e.runActivity(func(a *activities.Activities) any { return a.AttemptDeliveries }, ins)
	if err != nil {
		t.Fatal(err)
	}
	var got []deliveries.AttemptResult
	if err := val.Get(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d outcomes, want 5", len(got))
	}
	for i, res := range got {
		want, code := deliveries.StatusSucceeded, 200
		if i == 3 {
			want, code = deliveries.StatusFailed, http.StatusGone
		}
		if res.Status != want || res.StatusCode != code || res.Attempts != 1 {
			t.Errorf("outcome %d = %+v, want %s %d at attempt 1", i, res, want, code)
		}
		if rec := e.record(ev, ins[i].SubscriptionID); rec.Status != want || rec.AttemptCount != 1 {
			t.Errorf("record %d: %s after %d attempts, want %s after 1", i, rec.Status, rec.AttemptCount, want)
		}
	}
	if most != 2 || len(rc.got()) != 5 {
		t.Errorf("%d requests, at most %d at once; want 5, 2 at once", len(rc.got()), most)
	}
}
