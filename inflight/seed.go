package inflight

import "time"

// Learned is what another Limits learned of a webhook or a destination (a
// Snapshot's Limit and SlowStart): where this one starts it, so a shard
// whose round moves to another worker keeps its receivers' limits rather
// than probing them again from the initial ones.
type Learned struct {
	Limit     int
	SlowStart bool
}

// SeedWebhook starts a webhook this Limits does not hold at learned. One it
// holds keeps its own limit: its answers are the newer.
func (l *Limits) SeedWebhook(webhook string, learned Learned, now time.Time) {
	l.seed(l.webhooks, webhook, false, learned, l.opts.MaxLimit, now)
}

// SeedDestination starts a destination this Limits does not hold at
// learned, as SeedWebhook. A seeded destination is not probed: it has
// answered, on the worker that learned its limit.
func (l *Limits) SeedDestination(destination string, learned Learned, now time.Time) {
	l.seed(l.destinations, destination, true, learned, l.opts.MaxDestinationLimit, now)
}

func (l *Limits) seed(m map[string]*entry, key string, destination bool, learned Learned, maxLimit int, now time.Time) {
	if learned.Limit <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m[key] != nil {
		return
	}
	l.evict(now)
	e := l.entry(m, key, destination, now)
	e.value = float64(min(learned.Limit, maxLimit))
	e.slowStart = learned.SlowStart
	if !learned.SlowStart {
		// As after a decrease: slow start comes back only after
		// slowStartAfter without another.
		e.lastDecrease = now
	}
	e.answered = destination
}
