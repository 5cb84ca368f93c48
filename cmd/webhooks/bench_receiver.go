package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// benchReceiver is the loopback endpoint of the bench: it counts arrivals
// and measures each one's latency from when its event was ingested.
type benchReceiver struct {
	srv      *http.Server
	url      string
	mu       sync.Mutex
	started  map[string]time.Time // event id -> ingestion start
	lat      []time.Duration
	first    time.Time
	last     time.Time
	expected int
	done     chan struct{}
}

func startBenchReceiver() (*benchReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &benchReceiver{url: "http://" + ln.Addr().String() + "/hook", started: map[string]time.Time{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// expect resets the counters for a phase of expected arrivals.
func (r *benchReceiver) expect(n int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat = make([]time.Duration, 0, n)
	r.started = map[string]time.Time{}
	r.expected = n
	r.first, r.last = time.Time{}, time.Time{}
	r.done = make(chan struct{})
	return r.done
}

func (r *benchReceiver) ingested(eventID string, at time.Time) {
	r.mu.Lock()
	r.started[eventID] = at
	if r.first.IsZero() || at.Before(r.first) {
		r.first = at
	}
	r.mu.Unlock()
}

func (r *benchReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	now := time.Now()
	var p struct {
		EventID string `json:"eventId"`
	}
	_ = json.Unmarshal(body, &p)
	w.WriteHeader(http.StatusOK)
	r.mu.Lock()
	defer r.mu.Unlock()
	if start, ok := r.started[p.EventID]; ok {
		r.lat = append(r.lat, now.Sub(start))
	}
	r.last = now
	if len(r.lat) == r.expected && r.done != nil {
		close(r.done)
		r.done = nil
	}
}

// results returns the arrivals' latencies (sorted) and the phase's span.
func (r *benchReceiver) results() ([]time.Duration, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	return lat, r.last.Sub(r.first)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
