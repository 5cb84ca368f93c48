package activities

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestHandOver_KeepsWhatItCannotWriteBeforeTheLeasesEnd: a round that
// gives up hands its unwritten outcomes over; while the database is away
// they are kept, where the next claim of their deliveries finds them, once
// the earliest of their leases ends, not when the round's own deadline
// does (on 90d483f the write went on for the round's ten minutes, and the
// rounds that followed sent those deliveries again: chaos seed 11).
func TestHandOver_KeepsWhatItCannotWriteBeforeTheLeasesEnd(t *testing.T) {
	var wg sync.WaitGroup
	kept := make(chan []deliveries.AttemptRecord, 1)
	var writeUntil time.Time
	r := &outcomeRecorder{
		until: time.Now().Add(10 * time.Minute), outstanding: &wg, logger: slog.New(slog.DiscardHandler),
		write: func(_ context.Context, _ []deliveries.Claimed, _ []deliveries.AttemptRecord, _ []pendingLate, until time.Time) ([]Outcome, error) {
			writeUntil = until
			return nil, errors.New("the database is away")
		},
		keep: func(_ []deliveries.Claimed, records []deliveries.AttemptRecord) { kept <- records },
	}
	lease := time.Now().Add(300 * time.Millisecond)
	for i, until := range []time.Time{lease.Add(time.Second), lease, {}} {
		id := []string{"wdl_a", "wdl_b", "wdl_c"}[i]
		r.add(deliveries.Claimed{ID: id, LeasedUntil: until}, deliveries.AttemptRecord{DeliveryID: id, Status: deliveries.StatusSucceeded}, pendingLate{})
	}
	r.handOver(context.Background())
	wg.Wait()
	select {
	case got := <-kept:
		if len(got) != 3 {
			t.Errorf("kept %d outcomes, want all 3", len(got))
		}
	default:
		t.Fatal("nothing kept after the write gave up")
	}
	if !writeUntil.Equal(lease) {
		t.Errorf("the write was tried until %s, want the earliest lease's end %s (the round's deadline was %s)",
			writeUntil.Format(time.RFC3339Nano), lease.Format(time.RFC3339Nano), r.until.Format(time.RFC3339Nano))
	}
}
