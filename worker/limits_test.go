package worker_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

// TestLimits_SlowReceiverDrainsAtTheGrownLimit: a receiver that answers
// every request in 200 ms, whatever its load, gets more than the initial
// 16 in flight once its answers come back (the webhook's limit grows), the
// burst drains, and the webhook's health object says the limit that moved.
func TestLimits_SlowReceiverDrainsAtTheGrownLimit(t *testing.T) {
	e := newEnv(t, true, nil)
	var mu sync.Mutex
	inFlight, most := 0, 0
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{5}, true)
	rc.setSecret(secret)
	const events = 300
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range events / 8 {
				e.post(webhooks.EventRunCompleted, 5, "")
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return len(rc.got()) >= events-events%8 })
	mu.Lock()
	peak := most
	mu.Unlock()
	if peak <= 16 {
		t.Fatalf("the receiver had at most %d requests in flight, want more than the initial limit 16", peak)
	}
	// A round reports the limits that moved when it ends.
	var in map[string]any
	waitFor(t, func() bool {
		code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/health"), e.token, nil)
		if code != http.StatusOK {
			t.Fatalf("health: %d %v", code, out)
		}
		data, _ := out["data"].(map[string]any)
		in, _ = data["in_flight"].(map[string]any)
		limit, _ := in["limit"].(float64)
		return limit > 16 && in["observed_at"] != nil
	})
	t.Logf("%d deliveries, at most %d in flight at the receiver; health in_flight %v", len(rc.got()), peak, in)
}

// TestLimits_ReceiverThatStartsAnswering503ShrinksItsLimitThenOpensTheBreaker:
// a receiver that takes a burst at a grown limit and then answers 503 to
// everything gets its webhook's limit shrunk, and its breaker opens.
func TestLimits_ReceiverThatStartsAnswering503ShrinksItsLimitThenOpensTheBreaker(t *testing.T) {
	e := newEnv(t, true, nil)
	var failing atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(100 * time.Millisecond)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{6}, true)
	rc.setSecret(secret)
	health := func() (limit float64, breaker string) {
		code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/health"), e.token, nil)
		if code != http.StatusOK {
			t.Fatalf("health: %d %v", code, out)
		}
		data, _ := out["data"].(map[string]any)
		in, _ := data["in_flight"].(map[string]any)
		b, _ := data["breaker"].(map[string]any)
		limit, _ = in["limit"].(float64)
		breaker, _ = b["state"].(string)
		return limit, breaker
	}
	burst := func(n int) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n / 8 {
					e.post(webhooks.EventRunCompleted, 6, "")
				}
			}()
		}
		wg.Wait()
	}
	burst(240)
	var grown float64
	waitFor(t, func() bool { grown, _ = health(); return grown > 16 })
	failing.Store(true)
	burst(240)
	waitFor(t, func() bool {
		limit, breaker := health()
		return limit < grown && breaker == "open"
	})
	limit, breaker := health()
	t.Logf("limit %v grown, %v after the 503s; breaker %s", grown, limit, breaker)
}
