package topology

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Receiver is a loopback webhook endpoint that records every arrival, checks
// its signature, and measures the time since its event was accepted.
type Receiver struct {
	URL string
	srv *http.Server

	mu        sync.Mutex
	secrets   map[string]string    // webhook id -> hmac_secret
	accepted  map[string]time.Time // event id -> when ingestion answered 202
	arrivals  map[string]int       // webhook id + "/" + event id -> count
	latencies []time.Duration
	badSigs   int
	last      time.Time
	changed   chan struct{}
}

// StartReceiver listens on a loopback port until ctx ends.
func StartReceiver(ctx context.Context) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{
		URL:      "http://" + ln.Addr().String() + "/hook",
		secrets:  map[string]string{},
		accepted: map[string]time.Time{},
		arrivals: map[string]int{},
		changed:  make(chan struct{}, 1),
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = r.srv.Close() })
	return r, nil
}

// Trust records a webhook's secret so its deliveries can be verified.
func (r *Receiver) Trust(webhookID, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[webhookID] = secret
}

// Accepted notes when the API accepted an event.
func (r *Receiver) Accepted(eventID string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.accepted[eventID] = at
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
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
	r.mu.Lock()
	mac := hmac.New(sha256.New, []byte(r.secrets[p.WebhookID]))
	mac.Write(body)
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(req.Header.Get("Authorization"))) {
		r.badSigs++
	}
	key := p.WebhookID + "/" + p.EventID
	r.arrivals[key]++
	if r.arrivals[key] == 1 {
		if at, ok := r.accepted[p.EventID]; ok {
			r.latencies = append(r.latencies, now.Sub(at))
		}
	}
	r.last = now
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

// Stats is what the receiver saw.
type Stats struct {
	Unique, Duplicates, BadSignatures int
	Last                              time.Time
	P50, P99, Max                     time.Duration
}

// Stats summarises the arrivals so far.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Unique: len(r.arrivals), BadSignatures: r.badSigs, Last: r.last}
	for _, n := range r.arrivals {
		s.Duplicates += n - 1
	}
	lat := slices.Clone(r.latencies)
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		s.P50, s.P99, s.Max = lat[n*50/100], lat[min(n-1, n*99/100)], lat[n-1]
	}
	return s
}

// Reset forgets arrivals and latencies, for the next phase.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals, r.latencies, r.accepted, r.badSigs = map[string]int{}, nil, map[string]time.Time{}, 0
}

// WaitUnique blocks until at least n distinct deliveries arrived.
func (r *Receiver) WaitUnique(ctx context.Context, n int) error {
	for {
		if got := r.Stats().Unique; got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d deliveries arrived: %w", r.Stats().Unique, n, ctx.Err())
		case <-r.changed:
		case <-time.After(time.Second):
		}
	}
}
