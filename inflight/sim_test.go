package inflight_test

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/inflight"
)

// A discrete-event simulation: webhooks with backlogs send through Limits
// to simulated receivers as fast as the limits allow, in fake time.

// receiver answers an attempt that arrives with inFlight attempts at it
// (itself included): after latency, with class. A Rejected answer does not
// hold the receiver.
type receiver func(inFlight int, now time.Duration) (latency time.Duration, class inflight.Class)

// flat answers 2xx after d at any concurrency.
func flat(d time.Duration) receiver {
	return func(int, time.Duration) (time.Duration, inflight.Class) { return d, inflight.Succeeded }
}

// knee answers 2xx after perRequest x inFlight: its throughput is the same
// at any concurrency, so only queueing grows with more.
func knee(perRequest time.Duration) receiver {
	return func(n int, _ time.Duration) (time.Duration, inflight.Class) {
		return perRequest * time.Duration(n), inflight.Succeeded
	}
}

// workers answers 2xx after base with up to k in flight, and queues the
// rest: base x n/k above k.
func workers(base time.Duration, k int) receiver {
	return func(n int, _ time.Duration) (time.Duration, inflight.Class) {
		if n <= k {
			return base, inflight.Succeeded
		}
		return base * time.Duration(n) / time.Duration(k), inflight.Succeeded
	}
}

// rejectsAbove answers 2xx after d up to n in flight and 429 at once above.
func rejectsAbove(n int, d time.Duration) receiver {
	return func(in int, _ time.Duration) (time.Duration, inflight.Class) {
		if in > n {
			return 2 * time.Millisecond, inflight.Rejected
		}
		return d, inflight.Succeeded
	}
}

// noisy answers 2xx after base x U(0.8, 1.2) at any concurrency, and one
// attempt in 50 after 3 x base: a real receiver's jitter and tail, from a
// fixed seed.
func noisy(base time.Duration, seed uint64) receiver {
	rng := rand.New(rand.NewPCG(seed, seed))
	return func(int, time.Duration) (time.Duration, inflight.Class) {
		if rng.IntN(50) == 0 {
			return 3 * base, inflight.Succeeded
		}
		return time.Duration(float64(base) * (0.8 + 0.4*rng.Float64())), inflight.Succeeded
	}
}

// fastJittery answers in about a millisecond, but each answer takes up to
// 6 ms more at random: a loopback receiver on a busy machine, whose jitter
// is scheduling, not load.
func fastJittery(seed uint64) receiver {
	rng := rand.New(rand.NewPCG(seed, seed))
	return func(int, time.Duration) (time.Duration, inflight.Class) {
		return time.Millisecond + time.Duration(rng.IntN(6000))*time.Microsecond, inflight.Succeeded
	}
}

// hangsAfter behaves as r until at, and then never answers.
func hangsAfter(at time.Duration, r receiver) receiver {
	return func(n int, now time.Duration) (time.Duration, inflight.Class) {
		if now >= at {
			return time.Hour, inflight.Succeeded
		}
		return r(n, now)
	}
}

type simWebhook struct {
	target  inflight.Target
	backlog int // attempts still to send; <0: endless
	// arrives is when its backlog may start sending (0: at once).
	arrives time.Duration
}

type attemptRecord struct {
	start, end   time.Duration
	class        inflight.Class
	latency      time.Duration
	hostInFlight int // at the receiver when it arrived, itself included
}

type sim struct {
	t        *testing.T
	limits   *inflight.Limits
	epoch    time.Time
	now      time.Duration
	timeout  time.Duration
	receiver receiver
	webhooks []*simWebhook
	hostLoad int
	maxHost  int // the most in flight at the receiver after warmUp
	warmUp   time.Duration
	pending  pendingHeap
	attempts []attemptRecord
	// observe, when set, runs after every finished attempt.
	observe func(now time.Duration)
}

func newSim(t *testing.T, opts inflight.Options, r receiver, webhooks ...*simWebhook) *sim {
	return &sim{t: t, limits: inflight.New(opts), epoch: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
		timeout: 10 * time.Second, receiver: r, webhooks: webhooks}
}

// oneHost makes n webhooks with endless backlogs at one destination.
func oneHost(n int) []*simWebhook {
	hooks := make([]*simWebhook, n)
	for i := range hooks {
		hooks[i] = &simWebhook{target: inflight.Target{Webhook: "wh_" + string(rune('A'+i/26)) + string(rune('a'+i%26)),
			Destination: "https://receiver.example:443"}, backlog: -1}
	}
	return hooks
}

type pendingAttempt struct {
	permit inflight.Permit
	record attemptRecord
	holds  bool // holds a place at the receiver until it ends
}

type pendingHeap []pendingAttempt

func (h pendingHeap) Len() int           { return len(h) }
func (h pendingHeap) Less(i, j int) bool { return h[i].record.end < h[j].record.end }
func (h pendingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)        { *h = append(*h, x.(pendingAttempt)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// run simulates until the fake clock reaches until.
func (s *sim) run(until time.Duration) {
	s.t.Helper()
	for s.now < until {
		s.startWhatMay()
		arrival, waiting := s.nextArrival()
		if s.pending.Len() == 0 && !waiting {
			return
		}
		if waiting && (s.pending.Len() == 0 || arrival < s.pending[0].record.end) {
			s.now = arrival
			continue
		}
		a := heap.Pop(&s.pending).(pendingAttempt)
		s.now = a.record.end
		if a.holds {
			s.hostLoad--
		}
		a.permit.Done(inflight.Outcome{Class: a.record.class, Latency: a.record.latency})
		s.attempts = append(s.attempts, a.record)
		if s.observe != nil {
			s.observe(s.now)
		}
	}
}

// nextArrival is the earliest time after now a webhook's backlog arrives.
func (s *sim) nextArrival() (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, w := range s.webhooks {
		if w.backlog != 0 && w.arrives > s.now && (!found || w.arrives < next) {
			next, found = w.arrives, true
		}
	}
	return next, found
}

// startWhatMay starts attempts, one webhook at a time in turn, until no
// webhook with a backlog that has arrived gets a permit.
func (s *sim) startWhatMay() {
	for started := true; started; {
		started = false
		for _, w := range s.webhooks {
			if w.backlog == 0 || w.arrives > s.now {
				continue
			}
			p, ok := s.limits.TryAcquire(w.target, s.epoch.Add(s.now))
			if !ok {
				continue
			}
			started = true
			if w.backlog > 0 {
				w.backlog--
			}
			s.start(p)
		}
	}
}

func (s *sim) start(p inflight.Permit) {
	s.hostLoad++
	if s.now >= s.warmUp {
		s.maxHost = max(s.maxHost, s.hostLoad)
	}
	latency, class := s.receiver(s.hostLoad, s.now)
	rec := attemptRecord{start: s.now, class: class, latency: latency, hostInFlight: s.hostLoad}
	if latency >= s.timeout {
		rec.latency, rec.class = s.timeout, inflight.Unanswered
	}
	rec.end = s.now + rec.latency
	holds := class != inflight.Rejected
	if !holds {
		s.hostLoad--
	}
	heap.Push(&s.pending, pendingAttempt{permit: p, record: rec, holds: holds})
}

// lastAnswer is when the simulation's last attempt ended.
func (s *sim) lastAnswer() time.Duration {
	var last time.Duration
	for _, a := range s.attempts {
		last = max(last, a.end)
	}
	return last
}

// summary of the attempts that started in [from, to).
type summary struct {
	attempts, succeeded, rejected, unanswered int
	meanLatency                               time.Duration
	perSecond                                 float64
}

func (s *sim) summarize(from, to time.Duration) summary {
	var sum summary
	var total time.Duration
	for _, a := range s.attempts {
		if a.start < from || a.start >= to {
			continue
		}
		sum.attempts++
		switch a.class {
		case inflight.Succeeded:
			sum.succeeded++
			total += a.latency
		case inflight.Rejected:
			sum.rejected++
		case inflight.Unanswered:
			sum.unanswered++
		}
	}
	if sum.succeeded > 0 {
		sum.meanLatency = total / time.Duration(sum.succeeded)
		sum.perSecond = float64(sum.succeeded) / (to - from).Seconds()
	}
	return sum
}
