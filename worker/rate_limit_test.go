package worker_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// TestRateLimit_HoldsUnderABurst: a webhook limited to 5 requests a second
// gets a burst of 100 events (TEST_RATE_LIMIT_EVENTS) at 5 a second (within 10 %), on one worker
// and on two (the limit is the webhook's, whichever worker runs its lane);
// every delivery succeeds after one attempt (waiting over the rate is not
// a failure), and another webhook of the account is not held back.
func TestRateLimit_HoldsUnderABurst(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(map[int]string{1: "OneWorker", 2: "TwoWorkers"}[workers], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, true, nil)
			for range workers - 1 {
				e.startWorker(e.cfg)
			}
			rc := newReceiver(t, nil)
			sub, secret := e.subscribe(rc.URL+"/limited", allTypes, []int64{5}, true)
			rc.setSecret(secret)
			free, _ := e.subscribe(rc.URL+"/free", allTypes, []int64{6}, true)
			limit := 5.0
			e.setSettings(sub.ID, webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: &limit}})
			time.Sleep(time.Second) // the settings reach the workers (SettingsFreshFor)

			n := 100
			if v, err := strconv.Atoi(os.Getenv("TEST_RATE_LIMIT_EVENTS")); err == nil && v > 10 {
				n = v // the 200-event burst: TEST_RATE_LIMIT_EVENTS=200
			}
			ids := make([]string, n)
			for i := range ids {
				ids[i] = e.post(webhooks.EventRunCompleted, 5, "")
			}
			freeEvent := e.post(webhooks.EventRunCompleted, 6, "")
			if d := e.waitDelivery(freeEvent, free.ID); d.Status != deliveries.StatusSucceeded {
				t.Fatalf("the unlimited webhook: %s", d.Status)
			}
			freeDone := time.Now()
			for _, id := range ids {
				if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
					t.Fatalf("limited delivery %s: %s after %d attempts, want succeeded after 1", id, d.Status, d.AttemptCount)
				}
			}
			var arrivals []time.Time
			for _, r := range rc.got() {
				if r.Path == "/limited" {
					arrivals = append(arrivals, r.ArrivedAt)
				}
			}
			if len(arrivals) != n {
				t.Fatalf("the limited webhook got %d requests, want %d", len(arrivals), n)
			}
			// After the first second's burst (the limit's credit), 5 a second.
			span := arrivals[n-1].Sub(arrivals[0]).Seconds()
			rate := float64(n-int(limit)) / span
			if rate < limit*0.9 || rate > limit*1.1 {
				t.Errorf("%d deliveries in %.1f s: %.2f a second, want %.0f ± 10 %%", n, span, rate, limit)
			}
			for i := range arrivals {
				// No second holds more than the limit and its credit.
				j := i
				for j < len(arrivals) && arrivals[j].Sub(arrivals[i]) < time.Second {
					j++
				}
				if j-i > 2*int(limit) {
					t.Errorf("%d requests within one second from %s, want at most %d", j-i, arrivals[i].Format("15:04:05.000"), 2*int(limit))
					break
				}
			}
			if freeDone.After(arrivals[n/2]) {
				t.Errorf("the unlimited webhook's delivery came after half of the limited burst")
			}
			t.Logf("%d worker(s): %d deliveries at %.2f a second (limit %.0f)", workers, n, rate, limit)
		})
	}
}
