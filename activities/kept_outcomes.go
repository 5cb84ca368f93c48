package activities

import (
	"context"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// keptOutcomes holds the outcomes a worker's receivers gave that could not
// be recorded before their claims' leases ended (the database away longer
// than a lease): they are not thrown away, which would have the delivery
// sent again once the database is back. The worker keeps writing them
// until they are recorded, and a claim of one of their deliveries (the
// lease ended meanwhile) records the kept outcome instead of sending it
// again (pipeline.add). Another worker that claims such a delivery first
// sends it again: the keeping is per worker.
type keptOutcomes struct {
	mu      sync.Mutex
	byID    map[string]keptOutcome
	writing bool
	// retry is the wait between attempts to write what is kept.
	retry time.Duration
}

// keptOutcome is one attempt's outcome waiting to be recorded.
type keptOutcome struct {
	claimed deliveries.Claimed
	rec     deliveries.AttemptRecord
}

// keptRetry is how often a worker tries again to record what it keeps.
const keptRetry = 2 * time.Second

// keep adds outcomes the writer gave up on and makes sure something keeps
// writing them.
func (w *outcomeWriter) keep(claimed []deliveries.Claimed, records []deliveries.AttemptRecord) {
	k := w.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byID == nil {
		k.byID = map[string]keptOutcome{}
	}
	for i, r := range records {
		if old, ok := k.byID[r.DeliveryID]; !ok || old.rec.AttemptNumber <= r.AttemptNumber {
			k.byID[r.DeliveryID] = keptOutcome{claimed: claimed[i], rec: r}
		}
	}
	w.logger.Warn("outcomes kept until the database takes them", "attempts", len(records), "kept", len(k.byID))
	if !k.writing && len(k.byID) > 0 {
		k.writing = true
		go w.writeKept()
	}
}

// takeKept removes and returns the kept outcome of a delivery, if any.
func (w *outcomeWriter) takeKept(deliveryID string) (keptOutcome, bool) {
	k := w.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.byID[deliveryID]
	if ok {
		delete(k.byID, deliveryID)
	}
	return o, ok
}

// anyKept says whether the worker keeps any outcome (a claim looks its
// deliveries up only then).
func (w *outcomeWriter) anyKept() bool {
	k := w.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.byID) > 0
}

// writeKept writes what is kept, again every keptRetry, until nothing is.
func (w *outcomeWriter) writeKept() {
	k := w.kept
	for {
		time.Sleep(k.retryEvery())
		k.mu.Lock()
		claimed := make([]deliveries.Claimed, 0, len(k.byID))
		records := make([]deliveries.AttemptRecord, 0, len(k.byID))
		for _, o := range k.byID {
			claimed, records = append(claimed, o.claimed), append(records, o.rec)
		}
		if len(records) == 0 {
			k.writing = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := w.write(ctx, claimed, records, nil, time.Now().Add(5*time.Second))
		cancel()
		if err != nil {
			continue
		}
		k.mu.Lock()
		for _, r := range records {
			if o, ok := k.byID[r.DeliveryID]; ok && o.rec.AttemptNumber == r.AttemptNumber {
				delete(k.byID, r.DeliveryID)
			}
		}
		k.mu.Unlock()
		w.logger.Info("kept outcomes recorded", "attempts", len(records))
	}
}

func (k *keptOutcomes) retryEvery() time.Duration {
	if k.retry > 0 {
		return k.retry
	}
	return keptRetry
}

// recordKept records, in place of a new attempt, the kept outcome of a
// delivery claimed again (its earlier claim's lease ended while its
// outcome waited): the new claim is released first, uncounted, so the
// kept record applies as the delivery's latest attempt.
func (p *pipeline) recordKept(ctx context.Context, c deliveries.Claimed, o keptOutcome) {
	rs := p.rounds
	rctx, cancel := context.WithTimeout(ctx, releaseWithin)
	defer cancel()
	if _, err := rs.store.ReleaseClaims(rctx, []deliveries.Lease{c.Lease()}); err != nil {
		rs.outcomes.keep([]deliveries.Claimed{o.claimed}, []deliveries.AttemptRecord{o.rec})
		return // the claim comes back when its lease ends; the outcome is kept
	}
	outcomes, err := rs.outcomes.write(ctx, []deliveries.Claimed{o.claimed}, []deliveries.AttemptRecord{o.rec}, nil, rs.now().Add(recordInline))
	if err != nil {
		rs.outcomes.keep([]deliveries.Claimed{o.claimed}, []deliveries.AttemptRecord{o.rec})
		return
	}
	p.rec.outcomes = append(p.rec.outcomes, outcomes...)
}
