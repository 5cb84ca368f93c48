package topology

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Receiver is a loopback webhook endpoint that records every arrival, checks
// its signature, its path and its delivery id, and measures the time since
// its event was accepted. Many webhooks share one Receiver, each at a path
// of its own (URLFor), so they share its host and port, and its shape: how
// long it takes to answer, and whether it refuses (ReceiverShape). A
// delivery arrives when the receiver answers it 200; a request refused
// with 429, or whose sender gave up before the answer, did not arrive.
type Receiver struct {
	URL   string // webhooks point here or at URLFor(n)
	srv   *http.Server
	shape ReceiverShape

	mu          sync.Mutex
	hooks       map[string]trusted   // webhook id -> its secret and path
	accepted    map[string]time.Time // event id -> when ingestion answered 202
	answers     []time.Duration      // how long each ingestion took to answer
	expected    map[string]bool      // webhook id + "/" + event id that must arrive (Expect)
	arrivals    map[string]*arrival  // webhook id + "/" + event id
	deliveryIDs map[string]string    // Webhook-Id header -> the key it arrived for
	satisfied   int                  // expected keys that arrived
	badSigs     int
	wrongPaths  int
	badIDs      int // deliveries with no delivery id, or one that changed or was shared
	last        time.Time
	changed     chan struct{}
	// What the receiver saw of its load since the phase began.
	phaseStart                                       time.Time
	requests, refused, refusedLate, timeouts, failed int
	inFlight                                         inFlightMeter
	// latencies, when set (ObserveLatencies), is told each expected
	// delivery's ingest-to-arrival latency once, when it first arrives.
	latencies *LatencyWindow
}

type trusted struct{ secret, path string }

type arrival struct {
	n          int
	first      time.Time
	event      string
	deliveryID string
}

// StartReceiver listens on a loopback port until ctx ends and answers
// every delivery at once.
func StartReceiver(ctx context.Context) (*Receiver, error) {
	return StartShapedReceiver(ctx, ReceiverShape{Kind: Instant})
}

// StartShapedReceiver listens on a loopback port until ctx ends and
// answers as shape says.
func StartShapedReceiver(ctx context.Context, shape ReceiverShape) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/hook", shape: shape, hooks: map[string]trusted{}, changed: make(chan struct{}, 1)}
	r.clear()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = r.srv.Close() })
	return r, nil
}

// URLFor is the n-th webhook's own URL on the receiver.
func (r *Receiver) URLFor(n int) string { return r.URL + "/" + strconv.Itoa(n) }

// Trust records a webhook's secret and the client_url it was made with, so
// its deliveries are verified and must arrive at that URL's path.
func (r *Receiver) Trust(webhookID, secret, clientURL string) {
	u, err := url.Parse(clientURL)
	path := ""
	if err == nil {
		path = u.Path
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks[webhookID] = trusted{secret: secret, path: path}
}

// Accepted notes when the API accepted an event.
func (r *Receiver) Accepted(eventID string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.accepted[eventID] = at
}

// Answered notes how long an ingestion request took to answer, from its
// send to its 202 (Stats: AnswerP50, AnswerP99).
func (r *Receiver) Answered(took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, took)
}

// Expect notes that an accepted event must reach each of webhookIDs once.
// Call it after Accepted.
func (r *Receiver) Expect(eventID string, webhookIDs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, wh := range webhookIDs {
		key := wh + "/" + eventID
		if r.expected[key] {
			continue
		}
		r.expected[key] = true
		if a := r.arrivals[key]; a != nil { // it came before the 202 was read
			r.satisfied++
			r.observe(a.first, eventID)
		}
	}
}

// ObserveLatencies has the receiver add to w the ingest-to-arrival latency
// of each expected delivery, once, when it first arrives (one that came
// before its 202 was read counts as zero, as in Stats): a soak reads them
// interval by interval.
func (r *Receiver) ObserveLatencies(w *LatencyWindow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = w
}

// observe tells the latency window an expected delivery of eventID
// arrived first at first; called under the lock.
func (r *Receiver) observe(first time.Time, eventID string) {
	if r.latencies == nil {
		return
	}
	if at, ok := r.accepted[eventID]; ok {
		r.latencies.Add(max(0, first.Sub(at)))
	}
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var p struct {
		WebhookID string `json:"webhooksID"`
		EventID   string `json:"eventId"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, "json", http.StatusBadRequest)
		return
	}
	hold, admitted := r.admit(time.Now())
	if !admitted {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if r.shape.fails() {
		r.mu.Lock()
		r.inFlight.leave(time.Now())
		r.failed++
		r.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if !r.holdFor(req, hold) {
		return // the sender gave up: no answer reached it, so nothing arrived
	}
	r.record(time.Now(), body, p.WebhookID, p.EventID, req)
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

// admit counts a request that came at now and says how long to hold it,
// or that it is refused (429).
func (r *Receiver) admit(now time.Time) (hold time.Duration, admitted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if !r.shape.admits(r.inFlight.n + 1) {
		r.refused++
		if now.Sub(r.phaseStart) > refusalGrace {
			r.refusedLate++
		}
		return 0, false
	}
	return r.shape.hold(r.inFlight.enter(now)), true
}

// holdFor holds an admitted request for hold, and reports false (counting a
// timeout) when its sender gave up first.
func (r *Receiver) holdFor(req *http.Request, hold time.Duration) bool {
	answered := true
	if hold > 0 {
		t := time.NewTimer(hold)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			answered = false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight.leave(time.Now())
	if !answered {
		r.timeouts++
	}
	return answered
}

// record verifies and notes a delivery that arrives at now.
func (r *Receiver) record(now time.Time, body []byte, webhookID, eventID string, req *http.Request) {
	deliveryID := req.Header.Get("Webhook-Id")
	r.mu.Lock()
	defer r.mu.Unlock()
	hook := r.hooks[webhookID]
	mac := hmac.New(sha256.New, []byte(hook.secret))
	mac.Write(body)
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(req.Header.Get("Authorization"))) {
		r.badSigs++
	}
	if hook.path != "" && req.URL.Path != hook.path {
		r.wrongPaths++
	}
	key := webhookID + "/" + eventID
	a := r.arrivals[key]
	if a == nil {
		a = &arrival{first: now, event: eventID, deliveryID: deliveryID}
		r.arrivals[key] = a
		if r.expected[key] {
			r.satisfied++
			r.observe(now, eventID)
		}
		if other, seen := r.deliveryIDs[deliveryID]; deliveryID == "" || seen && other != key {
			r.badIDs++
		}
		r.deliveryIDs[deliveryID] = key
	} else if a.deliveryID != deliveryID {
		r.badIDs++ // a retry of one delivery carries its id
	}
	a.n++
	r.last = now
}

// Load is what a receiver saw of its senders since the phase began.
type Load struct {
	Requests int // every request, refused ones included
	// Failed were answered 500 by a Failing receiver.
	Failed int
	// Refused were answered 429; RefusedLate those more than five seconds
	// after the phase began, once a sender could have found the limit.
	Refused, RefusedLate int
	// Timeouts are requests whose sender gave up before the answer.
	Timeouts int
	// MaxInFlight and AvgInFlight are the requests held at once: the most,
	// and the time-weighted mean from the phase's first request to its
	// last answer.
	MaxInFlight int
	AvgInFlight float64
	InFlight    int // held now
}

// Load summarises the requests since the phase began (Reset).
func (r *Receiver) Load() Load {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Load{
		Requests: r.requests, Failed: r.failed, Refused: r.refused, RefusedLate: r.refusedLate, Timeouts: r.timeouts,
		MaxInFlight: r.inFlight.max, AvgInFlight: r.inFlight.average(), InFlight: r.inFlight.n,
	}
}

// Progress is how many of the deliveries Expect asked for arrived.
func (r *Receiver) Progress() (arrived, expected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.satisfied, len(r.expected)
}

// Stats is what the receiver saw.
type Stats struct {
	Unique, Duplicates, BadSignatures int
	Last                              time.Time
	P50, P99, Max                     time.Duration
	// AnswerP50 and AnswerP99 are the ingestion requests' answer times
	// (Answered): what a producer waits, before the latencies above start.
	AnswerP50, AnswerP99 time.Duration
}

// Stats summarises the arrivals so far. Latency runs from the 202 to the
// first arrival; one that came before the 202 was read counts as zero.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Unique: len(r.arrivals), BadSignatures: r.badSigs, Last: r.last}
	lat := make([]time.Duration, 0, len(r.arrivals))
	for _, a := range r.arrivals {
		s.Duplicates += a.n - 1
		if at, ok := r.accepted[a.event]; ok {
			lat = append(lat, max(0, a.first.Sub(at)))
		}
	}
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		s.P50, s.P99, s.Max = Percentile(lat, 50), Percentile(lat, 99), lat[n-1]
	}
	if len(r.answers) > 0 {
		answers := slices.Sorted(slices.Values(r.answers))
		s.AnswerP50, s.AnswerP99 = Percentile(answers, 50), Percentile(answers, 99)
	}
	return s
}

// Percentile is the p-th percentile (0-100) of sorted latencies, the
// element below which p % of them lie (0 when there are none).
func Percentile(sorted []time.Duration, p int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	return sorted[min(n-1, n*p/100)]
}

// Check says how the arrivals differ from what Expect asked for: missing,
// unexpected or repeated deliveries, bad signatures, deliveries at another
// webhook's path, and delivery ids that were missing, changed between
// attempts or shared by two deliveries. Nil when every expected delivery
// arrived exactly once, as it should.
func (r *Receiver) Check() error { return r.check(true) }

// check is Check; with missing false, deliveries that have not arrived are
// not a problem (a bounded wait reports them as a figure).
func (r *Receiver) check(missing bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []error
	if n := len(r.expected) - r.satisfied; missing && n > 0 {
		problems = append(problems, fmt.Errorf("%d of %d deliveries missing", n, len(r.expected)))
	}
	unexpected, repeated := 0, 0
	for key, a := range r.arrivals {
		if !r.expected[key] {
			unexpected++
		}
		repeated += a.n - 1
	}
	for _, p := range []struct {
		n    int
		what string
	}{
		{unexpected, "deliveries no event asked for"},
		{repeated, "repeated arrivals of a delivery"},
		{r.badSigs, "arrivals with a bad signature"},
		{r.wrongPaths, "arrivals at another webhook's path"},
		{r.badIDs, "arrivals whose delivery id (Webhook-Id) was missing, changed between attempts or shared with another delivery"},
	} {
		if p.n > 0 {
			problems = append(problems, fmt.Errorf("%d %s", p.n, p.what))
		}
	}
	if ids := len(r.deliveryIDs); ids != len(r.arrivals) {
		problems = append(problems, fmt.Errorf("%d distinct delivery ids for %d deliveries", ids, len(r.arrivals)))
	}
	return errors.Join(problems...)
}

// Reset forgets arrivals, expectations and latencies, for the next phase.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
}

func (r *Receiver) clear() {
	r.accepted, r.expected, r.arrivals, r.deliveryIDs = map[string]time.Time{}, map[string]bool{}, map[string]*arrival{}, map[string]string{}
	r.answers = nil
	r.satisfied, r.badSigs, r.wrongPaths, r.badIDs = 0, 0, 0, 0
	r.phaseStart = time.Now()
	r.requests, r.refused, r.refusedLate, r.timeouts, r.failed = 0, 0, 0, 0, 0
	r.inFlight.restart(r.phaseStart)
}

// WaitUnique blocks until at least n distinct deliveries arrived.
func (r *Receiver) WaitUnique(ctx context.Context, n int) error {
	return r.wait(ctx, 0, func() (int, int) { return len(r.arrivals), n })
}

// WaitExpected blocks until every delivery Expect asked for arrived, or
// none arrived for stall.
func (r *Receiver) WaitExpected(ctx context.Context, stall time.Duration) error {
	return r.wait(ctx, stall, func() (int, int) { return r.satisfied, len(r.expected) })
}

// wait polls progress (called under the lock) until done reaches want, ctx
// ends, or (stall > 0) it did not move for stall.
func (r *Receiver) wait(ctx context.Context, stall time.Duration, progress func() (done, want int)) error {
	lastDone, lastMove := -1, time.Now()
	for {
		r.mu.Lock()
		done, want := progress()
		r.mu.Unlock()
		if done >= want {
			return nil
		}
		if done != lastDone {
			lastDone, lastMove = done, time.Now()
		}
		if stall > 0 && time.Since(lastMove) > stall {
			return fmt.Errorf("%d of %d deliveries arrived, none in the last %s", done, want, stall)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d deliveries arrived: %w", done, want, ctx.Err())
		case <-r.changed:
		case <-time.After(time.Second):
		}
	}
}
