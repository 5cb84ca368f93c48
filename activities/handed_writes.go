package activities

import (
	"context"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// handedWrites records the outcomes of attempts handed over by their
// rounds (they outlived the patience, or their round gave up), gathered
// worker-wide for recordGather: the three hundred attempts of fifty hung
// webhooks that time out together are a few statements, not three hundred
// one-row writes. After each write it wakes the own lanes whose last
// handed-over attempt it recorded (laneWakes). One per worker.
type handedWrites struct {
	rs      *Rounds
	mu      sync.Mutex
	pending []handedWrite
	timer   *time.Timer
}

// handedWrite is one handed-over attempt's outcome to record.
type handedWrite struct {
	c           deliveries.Claimed
	rec         deliveries.AttemptRecord
	late        pendingLate
	leasedUntil time.Time
	wakesLane   bool
}

// add gathers an outcome for the next write (within recordGather).
func (h *handedWrites) add(x handedWrite) {
	h.rs.outstanding.Add(1) // Drain waits for the write
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, x)
	if h.timer == nil {
		h.timer = time.AfterFunc(recordGather, h.flush)
	}
}

// flush writes what was gathered, trying until the earliest of its
// leases ends; what it cannot write then is kept (keptOutcomes).
func (h *handedWrites) flush() {
	h.mu.Lock()
	batch := h.pending
	h.pending, h.timer = nil, nil
	h.mu.Unlock()
	defer h.rs.outstanding.Add(-len(batch))
	if len(batch) == 0 {
		return
	}
	claimed := make([]deliveries.Claimed, len(batch))
	records := make([]deliveries.AttemptRecord, len(batch))
	lates := make([]pendingLate, len(batch))
	until := batch[0].leasedUntil
	for i, x := range batch {
		claimed[i], records[i], lates[i] = x.c, x.rec, x.late
		until = minTime(until, x.leasedUntil)
	}
	ctx, cancel := context.WithDeadline(context.Background(), maxTime(until, time.Now().Add(recordInline)))
	defer cancel()
	if _, err := h.rs.outcomes.write(ctx, claimed, records, lates, until); err != nil {
		h.rs.logger.WarnContext(ctx, "cannot record handed-over attempts before their leases end; the worker keeps them",
			"attempts", len(batch), "error", err.Error())
		h.rs.outcomes.keep(claimed, records)
	}
	h.wakeLanes(batch)
}

// wakeLanes wakes the own lanes of the webhooks whose last handed-over
// attempt ended in batch.
func (h *handedWrites) wakeLanes(batch []handedWrite) {
	var lanes []deliveries.RoutedWebhook
	for _, x := range batch {
		if !x.wakesLane {
			continue
		}
		if lane, ok := h.rs.laneWakes.ended(x.c.Webhook.ID); ok {
			lanes = append(lanes, lane)
		}
	}
	if len(lanes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wakeWithin)
	defer cancel()
	// A few at a time: fifty lanes of a host that hung, started at once,
	// were a burst of workflow starts and claims that every other
	// account's deliveries on the box waited behind; their receivers are
	// hung, and a second more costs them nothing.
	for len(lanes) > 0 {
		n := min(len(lanes), laneWakeBatch)
		h.rs.wake.wakeOwnLanes(ctx, lanes[:n])
		if lanes = lanes[n:]; len(lanes) > 0 {
			select {
			case <-ctx.Done():
				return // the sweeper wakes the rest
			case <-time.After(laneWakeSpacing):
			}
		}
	}
}

// laneWakeBatch lanes are woken together, laneWakeSpacing apart.
const (
	laneWakeBatch   = 8
	laneWakeSpacing = 100 * time.Millisecond
)

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
