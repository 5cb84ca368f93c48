package topology_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTopology_GracefulShutdownLosesNoAcceptedEvent sends SIGTERM to the API
// and to one worker while events are being ingested: both must exit cleanly
// (the API drains in-flight requests, the worker finishes in-flight
// deliveries), and every event the API accepted with 202 must be delivered.
func TestTopology_GracefulShutdownLosesNoAcceptedEvent(t *testing.T) {
	d := newDeployment(t, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var (
		mu       sync.Mutex
		accepted []string
		refused  atomic.Int64
		wg       sync.WaitGroup
		next     atomic.Int64
		stop     atomic.Bool
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				i := next.Add(1)
				id, err := d.API.Ingest(ctx, d.account, fmt.Sprintf("drain-%d", i), int(i))
				if err != nil {
					// Refused once the listener has closed: the client knows
					// the event was not taken, so nothing is lost.
					refused.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				d.receiver.Accepted(id, time.Now())
				mu.Lock()
				accepted = append(accepted, id)
				mu.Unlock()
			}
		}()
	}
	// Let some deliveries be in flight, then stop the API and worker-1.
	if err := d.receiver.WaitUnique(ctx, 40); err != nil {
		t.Fatal(err)
	}
	apiErr := make(chan error, 1)
	go func() { apiErr <- d.api.Stop(30 * time.Second) }()
	if err := d.workers[0].Stop(30 * time.Second); err != nil {
		t.Errorf("worker-1 did not stop cleanly on SIGTERM: %v\n%s", err, d.workers[0].LogTail(2000))
	}
	if err := <-apiErr; err != nil {
		t.Errorf("API did not stop cleanly on SIGTERM: %v\n%s", err, d.api.LogTail(2000))
	}
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	n := len(accepted)
	mu.Unlock()
	if n == 0 {
		t.Fatal("no event was accepted")
	}
	if err := d.receiver.WaitUnique(ctx, n); err != nil {
		t.Fatalf("of %d accepted events: %v", n, err)
	}
	st := d.receiver.Stats()
	if st.Unique != n {
		t.Errorf("%d distinct deliveries arrived for %d accepted events", st.Unique, n)
	}
	t.Logf("%d events accepted before and during the drain, %d requests refused after the API closed; all %d delivered (duplicates %d)", n, refused.Load(), st.Unique, st.Duplicates)
}
