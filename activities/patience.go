package activities

import (
	"slices"
	"sync"
	"time"
)

// Patience follows how long answers take on this worker now. A shared
// round hands an attempt over (its webhook moves to a lane of its own)
// once the attempt has run the configured patience and patienceSpread
// times the 90th percentile of the worker's recent shared answers, at
// most patienceCeiling times the configured patience.
//
// A saturated box slows every answer alike: its goroutines, its receivers'
// answers and its event loop all wait for a core. Judged against a fixed
// 500 ms, healthy 200 ms receivers then looked hung; each hand-over started
// a Temporal workflow, which saturated the box further, and zipf traffic at
// 200 ms spiralled into thousands of own lanes. A hung receiver is slow
// against the others' answers, whatever they take.
const (
	patienceSpread  = 3
	patienceCeiling = 4
	// answerWindow is how many recent answers the percentile reads.
	answerWindow = 256
	// answerMinSamples: fewer answers than this say nothing about the box.
	answerMinSamples = 20
	// answerRefresh is how long a computed percentile is reused.
	answerRefresh = 100 * time.Millisecond
)

// answerTimes keeps how long the worker's recent shared attempts took from
// their start to their answer reaching their round (the patience's clock).
// Handed-over attempts never answer within their round, so a hung receiver
// cannot raise the patience it is judged by.
type answerTimes struct {
	mu    sync.Mutex
	ring  [answerWindow]time.Duration
	n     int // answers added in all
	p90   time.Duration
	p90At time.Time // when p90 was worked out (zero: never)
}

// add notes one answer's time.
func (a *answerTimes) add(d time.Duration) {
	a.mu.Lock()
	a.ring[a.n%answerWindow] = d
	a.n++
	a.mu.Unlock()
}

// percentile90 is the 90th percentile of the recent answers, and false
// while there are too few to say.
func (a *answerTimes) percentile90(now time.Time) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n < answerMinSamples {
		return 0, false
	}
	if !a.p90At.IsZero() && now.Sub(a.p90At) < answerRefresh {
		return a.p90, true
	}
	recent := slices.Clone(a.ring[:min(a.n, answerWindow)])
	slices.Sort(recent)
	a.p90, a.p90At = recent[len(recent)*9/10], now
	return a.p90, true
}

// patienceAt is how long a shared attempt may run at now before it is
// handed over, given the configured patience (0: never).
func (a *answerTimes) patienceAt(configured time.Duration, now time.Time) time.Duration {
	if configured <= 0 {
		return 0
	}
	p90, ok := a.percentile90(now)
	if !ok {
		return configured
	}
	return min(max(configured, patienceSpread*p90), patienceCeiling*configured)
}
