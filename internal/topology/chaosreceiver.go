package topology

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ReceiverMode is how a chaos receiver answers one webhook's deliveries.
type ReceiverMode int

const (
	AnswerOK      ReceiverMode = iota // 200 at once
	Answer5xx                         // 500 or 502
	AnswerHang                        // nothing until past the delivery timeout, then 503
	Answer429                         // 429 with Retry-After
	AnswerSlowly                      // 200 after most of the delivery timeout
	AnswerHostile                     // HostileAnswers in turn: NUL, invalid UTF-8, huge, trickling
)

func (m ReceiverMode) String() string {
	return [...]string{"ok", "5xx", "hang", "429", "slow", "hostile"}[m]
}

// ChaosReceiver is a loopback endpoint for many webhooks that records every
// arrival whole (headers, body, time, the answer it gave) for the checker,
// and answers each webhook as its mode says. It verifies nothing itself:
// which secret is valid depends on when the attempt started, which only
// the records say.
type ChaosReceiver struct {
	URL string
	// HangFor is how long AnswerHang holds a request (and a trickling
	// hostile answer lasts); SlowFor the longest
	// AnswerSlowly takes (it takes between half and all of it);
	// RetryAfter the seconds a 429 asks for.
	HangFor, SlowFor time.Duration
	RetryAfter       int
	// RefuseOneIn, when > 0, has the receiver refuse about one (event,
	// webhook) in that many for good: 500 to every attempt, whatever the
	// webhook's mode, so some deliveries spend their six attempts and end
	// failed under every fault (Refuses says which).
	RefuseOneIn uint32

	mu       sync.Mutex
	modes    map[string]ReceiverMode // webhook id -> mode
	arrivals []Arrival
	rnd      *rand.Rand
}

// StartChaosReceiver listens on a loopback port until ctx ends.
func StartChaosReceiver(ctx context.Context, timeout time.Duration) (*ChaosReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &ChaosReceiver{
		URL: "http://" + ln.Addr().String() + "/hook", HangFor: timeout + time.Second, SlowFor: timeout * 6 / 10, RetryAfter: 3,
		modes: map[string]ReceiverMode{}, rnd: rand.New(rand.NewPCG(1, 2)),
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return r, nil
}

// URLFor is the n-th webhook's own URL.
func (r *ChaosReceiver) URLFor(n int) string { return r.URL + "/" + strconv.Itoa(n) }

// SetMode makes the receiver answer webhookID's deliveries as mode says.
func (r *ChaosReceiver) SetMode(webhookID string, mode ReceiverMode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modes[webhookID] = mode
}

// Arrivals returns a copy of every arrival so far.
func (r *ChaosReceiver) Arrivals() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slicesClone(r.arrivals)
}

// Count is how many requests arrived so far.
func (r *ChaosReceiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrivals)
}

func slicesClone(a []Arrival) []Arrival { return append([]Arrival(nil), a...) }

func (r *ChaosReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return
	}
	var p struct {
		WebhookID string `json:"webhooksID"`
		EventID   string `json:"eventId"`
	}
	_ = json.Unmarshal(body, &p)
	attempt, _ := strconv.Atoi(req.Header.Get("Webhook-Attempt"))
	r.mu.Lock()
	mode := r.modes[p.WebhookID]
	slow := r.SlowFor/2 + time.Duration(r.rnd.Int64N(int64(r.SlowFor/2)+1))
	i := len(r.arrivals)
	var hostile HostileAnswer
	if mode == AnswerHostile && !r.Refuses(p.WebhookID, p.EventID) {
		hostile = HostileAnswers[i%len(HostileAnswers)]
	}
	r.arrivals = append(r.arrivals, Arrival{At: at, WebhookID: p.WebhookID, EventID: p.EventID, Attempt: attempt,
		Header: req.Header.Clone(), Body: body, Hostile: hostile.Name})
	r.mu.Unlock()

	if hostile.write != nil {
		status, whole := hostile.write(r, w)
		if whole {
			r.mu.Lock()
			r.arrivals[i].Answered, r.arrivals[i].AnsweredAt = status, time.Now()
			r.mu.Unlock()
		}
		return
	}

	status := http.StatusOK
	if r.Refuses(p.WebhookID, p.EventID) {
		mode, status = AnswerOK, http.StatusInternalServerError
	}
	switch mode {
	case Answer5xx:
		status = []int{http.StatusInternalServerError, http.StatusBadGateway}[i%2]
	case AnswerHang:
		sleep(req.Context(), r.HangFor)
		status = http.StatusServiceUnavailable
	case Answer429:
		w.Header().Set("Retry-After", strconv.Itoa(r.RetryAfter))
		status = http.StatusTooManyRequests
	case AnswerSlowly:
		sleep(req.Context(), slow)
	}
	if req.Context().Err() != nil {
		return // the sender gave up: no answer reached it
	}
	w.WriteHeader(status)
	r.mu.Lock()
	r.arrivals[i].Answered, r.arrivals[i].AnsweredAt = status, time.Now()
	r.mu.Unlock()
}

// Refuses says whether the receiver refuses webhookID's deliveries of
// eventID for good (RefuseOneIn).
func (r *ChaosReceiver) Refuses(webhookID, eventID string) bool {
	if r.RefuseOneIn == 0 {
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(webhookID + "/" + eventID))
	return h.Sum32()%r.RefuseOneIn == 0
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
