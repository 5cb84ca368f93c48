package topology_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// deliver posts a signed delivery of event to webhook at url, as a worker
// does.
func deliver(t *testing.T, url, webhook, secret, event, deliveryID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"webhooksID": webhook, "eventId": event})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", hex.EncodeToString(mac.Sum(nil)))
	if deliveryID != "" {
		req.Header.Set("Webhook-Id", deliveryID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestReceiver_CheckFindsEveryWayArrivalsDifferFromExpected(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Trust("wh_a", "sa", r.URLFor(1))
	r.Trust("wh_b", "sb", r.URLFor(2))
	a, b := r.URLFor(1), r.URLFor(2)

	for _, c := range []struct {
		name   string
		arrive func(t *testing.T)
		want   string // "" when Check must pass
	}{
		{"AsExpected", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, ""},
		{"Missing", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
		}, "1 of 3 deliveries missing"},
		{"Unexpected", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
			deliver(t, b, "wh_b", "sb", "e2", "d4")
		}, "1 deliveries no event asked for"},
		{"Repeated", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 repeated arrivals"},
		{"BadSignature", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "wrong", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals with a bad signature"},
		{"AnotherWebhooksPath", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals at another webhook's path"},
		{"NoDeliveryID", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals whose delivery id"},
		{"DeliveryIDChangedOnRetry", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e1", "d9")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals whose delivery id"},
		{"DeliveryIDShared", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "2 distinct delivery ids for 3 deliveries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.Reset()
			r.Accepted("e1", time.Now())
			r.Expect("e1", []string{"wh_a", "wh_b"})
			c.arrive(t)
			// e2 is expected only after its delivery may have arrived, as
			// when a delivery beats the 202 to the sender.
			r.Accepted("e2", time.Now())
			r.Expect("e2", []string{"wh_a"})
			if c.want == "" {
				if err := r.WaitExpected(ctx, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Check = %v, want %q", err, c.want)
			}
		})
	}
}

func TestReceiver_WaitExpectedGivesUpWhenNothingArrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Expect("e1", []string{"wh_a", "wh_b"})
	start := time.Now()
	err = r.WaitExpected(ctx, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "0 of 2 deliveries arrived") {
		t.Fatalf("WaitExpected = %v, want it to give up with 0 of 2", err)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("gave up after %s, want about the 1.5s stall", waited)
	}
}

// post sends webhook's signed delivery of event to url and returns its
// status (0 when the request failed, as when ctx ended first).
func post(ctx context.Context, url, webhook, secret, event string) int {
	body, _ := json.Marshal(map[string]string{"webhooksID": webhook, "eventId": event})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("Webhook-Id", "wdl_"+webhook+"_"+event)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitInFlight polls until r holds n requests.
func waitInFlight(t *testing.T, r *topology.Receiver, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Load().InFlight != n {
		if time.Now().After(deadline) {
			t.Fatalf("receiver holds %d requests, want %d", r.Load().InFlight, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startShaped(t *testing.T, kind string, o topology.ReceiverOptions) *topology.Receiver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	shape, err := topology.ParseReceiverShape(kind, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := topology.StartShapedReceiver(ctx, shape)
	if err != nil {
		t.Fatal(err)
	}
	r.Trust("wh_a", "sa", r.URL)
	return r
}

// The 429 receiver holds up to its limit and refuses the requests above
// it at once; requests whose sender gives up are timeouts, not arrivals.
func TestReceiver_LimitedRefusesAboveItsLimit(t *testing.T) {
	r := startShaped(t, "429", topology.ReceiverOptions{Limit: 3, Delay: 30 * time.Second})
	r.Accepted("e1", time.Now())
	r.Expect("e1", []string{"wh_a"})
	held, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	statuses := make(chan int, 3)
	for i := range 3 {
		go func() { statuses <- post(held, r.URL, "wh_a", "sa", fmt.Sprintf("e%d", i+1)) }()
	}
	waitInFlight(t, r, 3)
	for i := range 2 {
		if got := post(context.Background(), r.URL, "wh_a", "sa", fmt.Sprintf("e%d", i+4)); got != http.StatusTooManyRequests {
			t.Fatalf("request above the limit answered %d, want 429", got)
		}
	}
	l := r.Load()
	if l.Requests != 5 || l.Refused != 2 || l.RefusedLate != 0 || l.MaxInFlight != 3 || l.InFlight != 3 {
		t.Fatalf("load %+v; want 5 requests, 2 refused (none after 5s), 3 held at most and now", l)
	}
	giveUp()
	for range 3 {
		<-statuses
	}
	waitInFlight(t, r, 0)
	if l := r.Load(); l.Timeouts != 3 {
		t.Errorf("%d timeouts, want the 3 held requests whose sender gave up", l.Timeouts)
	}
	if arrived, expected := r.Progress(); arrived != 0 || expected != 1 {
		t.Errorf("%d of %d arrived; refused and abandoned requests are not arrivals", arrived, expected)
	}
}

// A knee receiver holds a request Step × the requests in flight with it,
// and counts the requests it held at once.
func TestReceiver_KneeLatencyGrowsWithConcurrency(t *testing.T) {
	const step = 300 * time.Millisecond
	r := startShaped(t, "knee", topology.ReceiverOptions{Step: step})
	for _, e := range []string{"e1", "e2", "e3"} {
		r.Accepted(e, time.Now())
		r.Expect(e, []string{"wh_a"})
	}
	took := make(chan time.Duration, 3)
	for i, e := range []string{"e1", "e2", "e3"} {
		go func() {
			start := time.Now()
			if got := post(context.Background(), r.URL, "wh_a", "sa", e); got != http.StatusOK {
				t.Errorf("%s answered %d", e, got)
			}
			took <- time.Since(start)
		}()
		waitInFlight(t, r, i+1) // each arrives while the ones before are held
	}
	var slowest time.Duration
	for range 3 {
		slowest = max(slowest, <-took)
	}
	if slowest < 3*step || slowest > 3*step+5*time.Second {
		t.Errorf("the third request in flight took %s, want 3 × %s (and well under %s more)", slowest, step, 5*time.Second)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if l := r.Load(); l.MaxInFlight != 3 || l.InFlight != 0 || l.AvgInFlight < 1 || l.AvgInFlight > 3 || l.Refused != 0 || l.Timeouts != 0 {
		t.Errorf("load %+v; want 3 at most, an average between 1 and 3, nothing refused or timed out", l)
	}
}

// A delayed receiver's arrivals come after its delay, and the latency from
// acceptance includes it.
func TestReceiver_DelayedAnswersAfterItsDelay(t *testing.T) {
	r := startShaped(t, "delay", topology.ReceiverOptions{Delay: 100 * time.Millisecond})
	r.Accepted("e1", time.Now())
	r.Expect("e1", []string{"wh_a"})
	if got := post(context.Background(), r.URL, "wh_a", "sa", "e1"); got != http.StatusOK {
		t.Fatalf("answered %d", got)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.P50 < 100*time.Millisecond || s.P50 > 5*time.Second {
		t.Errorf("latency %s, want the 100ms delay and not much more", s.P50)
	}
}

func TestReceiver_FailingAnswers500AndRecordsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := topology.StartShapedReceiver(ctx, topology.ReceiverShape{Kind: topology.Failing})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := http.Post(r.URLFor(1), "application/json", strings.NewReader(`{"webhooksID":"wh_a","eventId":"e1"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("failing receiver answered %d, want 500", resp.StatusCode)
		}
	}
	if l, st := r.Load(), r.Stats(); l.Requests != 3 || l.Failed != 3 || l.InFlight != 0 || st.Unique != 0 {
		t.Errorf("load %+v, %d arrivals; want 3 requests, 3 failed, none in flight, none arrived", l, st.Unique)
	}
}

func TestReceiver_ObservesEachExpectedLatencyOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var w topology.LatencyWindow
	r.ObserveLatencies(&w)
	r.Trust("wh_a", "sa", r.URLFor(1))
	url := r.URLFor(1)

	// Accepted and expected, then arrives (and again: a duplicate).
	r.Accepted("e1", time.Now())
	r.Expect("e1", []string{"wh_a"})
	deliver(t, url, "wh_a", "sa", "e1", "d1")
	deliver(t, url, "wh_a", "sa", "e1", "d1")
	// Arrives before its 202 was read: observed as zero when expected.
	deliver(t, url, "wh_a", "sa", "e2", "d2")
	r.Accepted("e2", time.Now())
	r.Expect("e2", []string{"wh_a"})
	// Never expected (a failing webhook's event): not observed.
	r.Accepted("e3", time.Now())
	deliver(t, url, "wh_a", "sa", "e3", "d3")

	got := w.Take()
	if len(got) != 2 || got[0] != 0 || got[1] <= 0 {
		t.Errorf("latencies = %v, want [0 and one above 0]", got)
	}
}

// The ingestion answers' percentiles come from what Answered noted, and a
// new phase starts without them.
func TestReceiver_AnswerTimesArePercentilesOfWhatWasNoted(t *testing.T) {
	r := startShaped(t, "instant", topology.ReceiverOptions{})
	for i := 100; i >= 1; i-- {
		r.Answered(time.Duration(i) * time.Millisecond)
	}
	if s := r.Stats(); s.AnswerP50 != 51*time.Millisecond || s.AnswerP99 != 100*time.Millisecond {
		t.Errorf("answers p50 %s p99 %s, want 51ms and 100ms", s.AnswerP50, s.AnswerP99)
	}
	r.Reset()
	if s := r.Stats(); s.AnswerP50 != 0 || s.AnswerP99 != 0 {
		t.Errorf("after Reset answers p50 %s p99 %s, want none", s.AnswerP50, s.AnswerP99)
	}
}
