package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Outpost's webhook headers in its default mode: the event id, and
// "v0=" + hex HMAC-SHA256 of the raw body for each of the destination's
// secrets, separated by commas.
const (
	eventIDHeader   = "X-Outpost-Event-Id"
	signatureHeader = "X-Outpost-Signature"
)

// receiver is the loopback HTTP server every destination of a run points
// at, each at its own path /d/<destination id>. It answers 200 after delay
// and notes each request in the tracker of the phase under way.
type receiver struct {
	delay time.Duration
	srv   *http.Server
	ln    net.Listener

	mu      sync.Mutex
	secrets map[string]string // destination id -> signing secret
	tracker *tracker          // the phase's; nil between phases
	strays  int               // requests that came between phases
}

func startReceiver(delay time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver listen: %w", err)
	}
	r := &receiver{delay: delay, ln: ln, secrets: map[string]string{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// url is the address of destination id's endpoint.
func (r *receiver) url(id string) string {
	return fmt.Sprintf("http://%s/d/%s", r.ln.Addr(), id)
}

func (r *receiver) addDestination(id, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[id] = secret
}

// track sends the requests that come from now on to t (nil: none).
func (r *receiver) track(t *tracker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracker = t
}

func (r *receiver) close(ctx context.Context) error {
	return r.srv.Shutdown(ctx)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	dest := strings.TrimPrefix(req.URL.Path, "/d/")
	r.mu.Lock()
	secret, t := r.secrets[dest], r.tracker
	if t == nil {
		r.strays++
	}
	r.mu.Unlock()
	signed := verifySignature(secret, body, req.Header.Get(signatureHeader))
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	w.WriteHeader(http.StatusOK)
	if t != nil {
		t.arrive(req.Header.Get(eventIDHeader), dest, signed, time.Now())
	}
}

// verifySignature reports whether header holds a "v0=" HMAC-SHA256 of body
// made with secret, among the comma-separated signatures Outpost sends
// while a previous secret is still valid.
func verifySignature(secret string, body []byte, header string) bool {
	if secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	sigs, ok := strings.CutPrefix(header, "v0=")
	if !ok {
		return false
	}
	for _, s := range strings.Split(sigs, ",") {
		got, err := hex.DecodeString(strings.TrimSpace(s))
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// tracker is what a phase expects and what arrived: each event must reach
// its destination once, signed with the destination's secret.
type tracker struct {
	mu        sync.Mutex
	want      map[string]string    // event id -> destination id
	accepted  map[string]time.Time // event id -> when its publish got its 202
	arrived   map[string]time.Time // event id -> first arrival
	last      time.Time            // the last first arrival
	dups      int                  // arrivals of an event already arrived
	unsigned  int                  // arrivals whose signature did not verify
	misrouted int                  // arrivals at another destination's path
	unknown   int                  // arrivals of no event of the phase
	done      chan struct{}        // closed when every event has arrived
}

func newTracker(want map[string]string) *tracker {
	return &tracker{
		want: want, accepted: make(map[string]time.Time, len(want)),
		arrived: make(map[string]time.Time, len(want)), done: make(chan struct{}),
	}
}

func (t *tracker) accept(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.accepted[id] = at
}

func (t *tracker) arrive(id, dest string, signed bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	wantDest, ok := t.want[id]
	switch {
	case !ok:
		t.unknown++
		return
	case wantDest != dest:
		t.misrouted++
	case !signed:
		t.unsigned++
	}
	if _, seen := t.arrived[id]; seen {
		t.dups++
		return
	}
	t.arrived[id] = at
	t.last = at
	if len(t.arrived) == len(t.want) {
		close(t.done)
	}
}

// wait returns when every event has arrived, or after drain without an
// arrival, or when ctx ends.
func (t *tracker) wait(ctx context.Context, drain time.Duration) error {
	for {
		t.mu.Lock()
		n := len(t.arrived)
		t.mu.Unlock()
		select {
		case <-t.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drain):
			t.mu.Lock()
			stalled := len(t.arrived) == n
			t.mu.Unlock()
			if stalled {
				return errStalled
			}
		}
	}
}

// errStalled means no delivery arrived for a whole drain period while some
// were still missing.
var errStalled = errors.New("no arrival for the whole drain period")

// latencies returns each arrived event's time from its 202 to its first
// arrival; an arrival that beat the 202 back to the sender counts as 0, as
// the webhooks bench counts it.
func (t *tracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Duration, 0, len(t.arrived))
	for id, at := range t.arrived {
		if acc, ok := t.accepted[id]; ok {
			out = append(out, max(0, at.Sub(acc)))
		}
	}
	return out
}
