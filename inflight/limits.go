// Package inflight limits the attempts in flight to each webhook and each
// destination (scheme, host, port) adaptively: a limit grows while its
// receiver answers 2xx at about its unloaded latency, and shrinks on
// rejections (429, 503), no answers (timeouts, refused connections) and
// rising latency. It never blocks and runs no goroutines: the caller
// passes the time in and asks before it claims work.
package inflight

import (
	"sync"
	"time"
)

// DefaultMaxLimit bounds a webhook's limit when nothing else is set: the
// default of DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK too (config), so a worker
// and a package used on its own (tests, tools) bound it alike. It is the
// destination's bound (DefaultMaxDestinationLimit): most hosts serve one
// webhook, and a webhook whose receiver answers at its unloaded latency
// with a backlog behind it may use what its host could. At 256, one
// webhook behind a 200 ms receiver was held at 1,280 a second and 2,000
// events took 2.5 s (docs/performance.md, "One webhook's ramp").
const DefaultMaxLimit = 1024

// DefaultMaxDestinationLimit bounds a destination's limit when nothing
// else is set (and MaxLimit is not above it): the default of
// DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION too.
const DefaultMaxDestinationLimit = 1024

// Options are the operator's bounds. Zero values take the defaults.
type Options struct {
	// MaxLimit bounds a webhook's limit (default DefaultMaxLimit).
	MaxLimit int
	// MaxDestinationLimit bounds a destination's limit, shared by all its
	// webhooks (default DefaultMaxDestinationLimit, at least MaxLimit).
	MaxDestinationLimit int
	// InitialLimit is where a webhook not seen within IdleTTL starts
	// (default 16, at most MaxLimit).
	InitialLimit int
	// InitialDestinationLimit is where a destination not seen within
	// IdleTTL starts (default 2 x InitialLimit, at most
	// MaxDestinationLimit): its webhooks each start at InitialLimit, and a
	// destination that started there too held an account's many cold
	// webhooks on one host to one webhook's first round trips (2,000
	// events to 2,000 webhooks behind a 200 ms receiver waited 1.4 s at
	// the median, 1.0 s from 32). Not more: from 64, a host that refuses
	// above 8 refused 56 of a burst to 100 of its webhooks at once, and
	// their retries took them past a minute (docs/performance.md).
	InitialDestinationLimit int
	// IdleTTL is how long a key with nothing in flight keeps what it
	// learned (default 10 minutes).
	IdleTTL time.Duration
	// MaxKeys bounds the keys held (webhooks and destinations together,
	// default 200,000): beyond it the least recently used idle key goes.
	MaxKeys int
}

func (o Options) withDefaults() Options {
	if o.MaxLimit <= 0 {
		o.MaxLimit = DefaultMaxLimit
	}
	if o.MaxDestinationLimit <= 0 {
		o.MaxDestinationLimit = max(DefaultMaxDestinationLimit, o.MaxLimit)
	}
	if o.InitialLimit <= 0 {
		o.InitialLimit = 16
	}
	o.InitialLimit = min(o.InitialLimit, o.MaxLimit, o.MaxDestinationLimit)
	if o.InitialDestinationLimit <= 0 {
		o.InitialDestinationLimit = 2 * o.InitialLimit
	}
	o.InitialDestinationLimit = min(o.InitialDestinationLimit, o.MaxDestinationLimit)
	if o.IdleTTL <= 0 {
		o.IdleTTL = 10 * time.Minute
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 200_000
	}
	return o
}

// Target names what an attempt goes to.
type Target struct {
	Webhook string
	// Destination is the webhook's Destination(client_url).
	Destination string
	// Cap, when above zero, bounds the webhook's limit (a rate limit of r
	// per second with answers in d implies about r x d).
	Cap int
}

// Limits holds the limits of the webhooks and destinations seen within
// IdleTTL. It is safe for concurrent use.
type Limits struct {
	opts Options

	mu           sync.Mutex
	webhooks     map[string]*entry
	destinations map[string]*entry
	lru          entry // sentinel of the list of entries, most recent first
}

// entry is one key's limit and its place in the idle-eviction list.
type entry struct {
	limit
	key         string
	destination bool
	callerCap   int
	lastUsed    time.Time
	prev, next  *entry
	// answered (a destination's): one of its attempts has been answered
	// since it was first seen (or last evicted); until then it is probed.
	answered bool
}

// probing caps a destination that has not answered yet at one webhook's
// initial limit: the first contact with a host sends that many, whatever
// the rounds and claims that reach it at once (two shards' rounds on one
// worker each took one webhook's worth of a new destination, and a host
// that refuses above 8 refused 24 of them instead of 8), and the
// destination's own initial limit applies from its first answer on.
func (l *Limits) probing(dest *entry) int {
	if dest != nil && dest.answered {
		return capOrAll(0)
	}
	return l.opts.InitialLimit
}

// New returns empty limits with opts' bounds.
func New(opts Options) *Limits {
	l := &Limits{opts: opts.withDefaults(), webhooks: map[string]*entry{}, destinations: map[string]*entry{}}
	l.lru.prev, l.lru.next = &l.lru, &l.lru
	return l
}

// Permit is one attempt's slot on its webhook and destination. Call Done
// exactly once; the zero Permit's Done does nothing.
type Permit struct {
	limits                *Limits
	webhook, destination  *entry
	started               time.Time
	webhookLoad, destLoad int32
	webhookGen, destGen   uint32
}

// TryAcquire takes a slot for an attempt to t if both t's webhook and its
// destination have one free, and never waits.
func (l *Limits) TryAcquire(t Target, now time.Time) (Permit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evict(now)
	hook := l.entry(l.webhooks, t.Webhook, false, now)
	dest := l.entry(l.destinations, t.Destination, true, now)
	hook.callerCap = t.Cap
	if hook.inFlight >= hook.allowed(l.opts.MaxLimit, t.Cap) ||
		dest.inFlight >= min(dest.allowed(l.opts.MaxDestinationLimit, 0), l.probing(dest)) {
		return Permit{}, false
	}
	hook.inFlight++
	dest.inFlight++
	hook.markUsed(l.opts.MaxLimit, t.Cap, now)
	dest.markUsed(l.opts.MaxDestinationLimit, 0, now)
	return Permit{limits: l, webhook: hook, destination: dest, started: now,
		webhookLoad: int32(hook.inFlight), destLoad: int32(dest.inFlight),
		webhookGen: hook.generation, destGen: dest.generation}, true
}

// Available is how many more attempts to t may start now: the lesser of
// what its webhook and its destination have free.
func (l *Limits) Available(t Target) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(l.free(false, t.Webhook, l.opts.MaxLimit, t.Cap),
		l.free(true, t.Destination, l.opts.MaxDestinationLimit, 0))
}

// DestinationAvailable is how many more attempts to destination may start
// now, whatever their webhooks.
func (l *Limits) DestinationAvailable(destination string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.free(true, destination, l.opts.MaxDestinationLimit, 0)
}

// WebhookAvailable is how many more attempts to a webhook may start now,
// its destination aside (a caller that does not know it yet).
func (l *Limits) WebhookAvailable(webhook string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.free(false, webhook, l.opts.MaxLimit, 0)
}

// Initial is the limit of a webhook not seen lately.
func (l *Limits) Initial() int { return l.opts.InitialLimit }

// InitialDestination is the limit of a destination not seen lately.
func (l *Limits) InitialDestination() int { return l.opts.InitialDestinationLimit }

// initial is where a new webhook's or destination's limit starts.
func (l *Limits) initial(destination bool) int {
	if destination {
		return l.opts.InitialDestinationLimit
	}
	return l.opts.InitialLimit
}

func (l *Limits) free(destination bool, key string, maxLimit, callerCap int) int {
	m := l.webhooks
	if destination {
		m = l.destinations
	}
	e := m[key]
	if e == nil {
		n := min(l.initial(destination), max(maxLimit, 1), capOrAll(callerCap))
		if destination {
			n = min(n, l.probing(nil))
		}
		return n
	}
	allowed := e.allowed(maxLimit, callerCap)
	if destination {
		allowed = min(allowed, l.probing(e))
	}
	return max(0, allowed-e.inFlight)
}

func capOrAll(c int) int {
	if c > 0 {
		return c
	}
	return int(^uint(0) >> 1)
}

// Done frees the permit's slots and teaches both limits what the attempt's
// outcome says about the receiver.
func (p Permit) Done(o Outcome) {
	if p.limits == nil {
		return
	}
	l := p.limits
	end := p.started.Add(o.Latency)
	l.mu.Lock()
	defer l.mu.Unlock()
	p.webhook.inFlight--
	p.destination.inFlight--
	if o.Class != NotSent {
		p.destination.answered = true
	}
	p.webhook.record(sample{outcome: o, end: end, load: int(p.webhookLoad), used: p.webhook.usedSince(p.started), generation: p.webhookGen,
		useLatency: true, maxLimit: float64(effectiveMax(l.opts.MaxLimit, p.webhook.callerCap)), slowStartStep: webhookSlowStartStep})
	p.destination.record(sample{outcome: o, end: end, load: int(p.destLoad), used: p.destination.usedSince(p.started), generation: p.destGen,
		maxLimit: float64(l.opts.MaxDestinationLimit), slowStartStep: destinationSlowStartStep})
	l.touch(p.webhook, end)
	l.touch(p.destination, end)
}

func effectiveMax(maxLimit, callerCap int) int {
	if callerCap > 0 {
		return min(maxLimit, callerCap)
	}
	return maxLimit
}

// Snapshot is what a webhook's or destination's limit is now.
type Snapshot struct {
	Limit    int
	InFlight int
	// MinLatency is the unloaded latency the limit compares answers with
	// (zero until a success; destinations do not track it).
	MinLatency time.Duration
	// Latency is the smoothed latency of recent successes.
	Latency time.Duration
	// Rejected and Unanswered count the attempts of each class since the
	// key was first seen (or last evicted).
	Rejected, Unanswered uint64
	// SlowStart: the limit still grows by a step a success (no rejection
	// or unanswered attempt lately), not by one a round trip.
	SlowStart bool
}

// Snapshot reports a webhook's limit; false when it holds none (never
// seen, or idle past IdleTTL).
func (l *Limits) Snapshot(webhook string) (Snapshot, bool) {
	return l.snapshot(l.webhooks, webhook, l.opts.MaxLimit)
}

// DestinationSnapshot reports a destination's limit, as Snapshot.
func (l *Limits) DestinationSnapshot(destination string) (Snapshot, bool) {
	return l.snapshot(l.destinations, destination, l.opts.MaxDestinationLimit)
}

func (l *Limits) snapshot(m map[string]*entry, key string, maxLimit int) (Snapshot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := m[key]
	if e == nil {
		return Snapshot{}, false
	}
	return Snapshot{Limit: e.allowed(maxLimit, e.callerCap), InFlight: e.inFlight,
		MinLatency: e.minLatency.min(), Latency: e.srtt, Rejected: e.rejected, Unanswered: e.unanswered,
		SlowStart: e.slowStart}, true
}

// Keys is how many webhooks and destinations are held.
func (l *Limits) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.webhooks) + len(l.destinations)
}
