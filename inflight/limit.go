package inflight

import "time"

// The algorithm's constants. They are not settings: each is the answer to
// a test in limits_receivers_test.go, and changing one means running them.
const (
	// latencyTolerance: a round whose least latency is above this multiple
	// of the unloaded latency queued at the receiver, and shrinks the
	// limit; at or below it the limit may grow.
	latencyTolerance = 1.5
	// latencySlack: a latency counts as queueing only when it is also this
	// much over the unloaded one, so the jitter of a receiver that answers
	// in a millisecond (a loaded machine's scheduling) is not read as load.
	latencySlack = 10 * time.Millisecond
	// latencyBackoff, rejectedBackoff, unansweredBackoff: the factor a
	// generation's first signal of each kind multiplies the limit by.
	latencyBackoff    = 0.9
	rejectedBackoff   = 0.7
	unansweredBackoff = 0.5
	// unansweredEach: the factor every further unanswered attempt of the
	// same generation multiplies it by, so 256 timeouts of a receiver that
	// hung bring 256 to 1 within one timeout, not eight.
	unansweredEach = 0.9
	// probeAfter: how long the limit stays below the concurrency at which
	// the receiver last rejected or dropped an attempt before it probes
	// past it again (one rejection per probe keeps a receiver that answers
	// 429 above N under 1 % of 429s).
	probeAfter = 10 * time.Second
	// destinationSlowStartStep: what each success adds to a destination's
	// limit in slow start (a webhook's adds two, tripling it per round
	// trip): fourfold per round trip, 32 -> 128 -> 512. A destination's
	// limit is the sum its webhooks share, and an account's many cold
	// webhooks on one host start together: 2,000 events to 2,000 webhooks
	// behind a 200 ms receiver arrive at about 2,000/s and need 400 in
	// flight, which doubling reached a second late. Not eightfold: it left
	// that burst's last delivery 0.24-0.32 s after its last event against
	// 0.23-0.54 s, but a host that refuses above 100 refused 156 of a burst
	// to 1,000 of its webhooks in the second round trip against 28, and the
	// refused waited out their Retry-After (p50 13.6 s against 1.7 s;
	// docs/performance.md). Slow start ends at the first rejection or
	// unanswered attempt.
	destinationSlowStartStep = 3
	// webhookSlowStartStep: what each success adds to a webhook's limit in
	// slow start: threefold per round trip, 16 -> 48 -> 144 -> 432. A
	// webhook with a backlog behind a 200 ms receiver reached 256 a second
	// late by doubling (2,000 events took 2.4 s at most 1,024 in flight,
	// 1.4 s tripling). Not fourfold like a destination: one webhook's
	// receiver that refuses above N sees at most 3N in the round trip that
	// finds it (a destination's webhooks share what it refuses).
	webhookSlowStartStep = 2
	// slowStartAfter: after this long without a decrease the limit doubles
	// per round trip again, so a receiver that recovered from an outage
	// gets its capacity back in seconds, not minutes.
	slowStartAfter = 60 * time.Second
	// minLatencyWindow: the unloaded latency is the least latency of the
	// last one or two windows of this length.
	minLatencyWindow = 30 * time.Second
	// roundSamples: the fewest successes a round of latencies takes, so a
	// slow webhook's round is not one answer.
	roundSamples = 4
	// srttWeight: the weight of one sample in the smoothed latency (shown,
	// not used to decide).
	srttWeight = 0.125
)

// limit is one key's adaptive in-flight limit: a webhook's (signals:
// latency, rejections, no answers) or a destination's (rejections and no
// answers only, since webhooks on one host may have paths of any latency).
//
// It grows while used: in slow start by webhookSlowStartStep a success
// for a webhook (tripling per round trip) and by destinationSlowStartStep for a
// destination, by one per round trip after the first decrease. It shrinks
// once per generation (the attempts that started since the last decrease):
// a rejection multiplies it by 0.7 and remembers the concurrency refused
// as a ceiling for probeAfter; a round whose least latency is over 1.5x
// the unloaded one by 0.9; an unanswered attempt by 0.5, and each further
// one of the generation by 0.9.
type limit struct {
	value     float64
	inFlight  int
	slowStart bool
	// generation counts decreases; a permit carries the generation it
	// started in, and only a permit of the current one decreases again.
	generation   uint32
	lastDecrease time.Time
	// ceiling, while now is before ceilingUntil, is the concurrency at
	// which the receiver last refused: the limit stays below it.
	ceiling      float64
	ceilingUntil time.Time
	srtt         time.Duration
	minLatency   minWindow
	// the current round of successes, and whether the last one queued
	roundStart  time.Time
	roundMin    time.Duration
	roundCount  int
	roundQueued bool
	// halfUsedAt is when an attempt last started with at least half the
	// limit in flight: an attempt in flight then counts as evidence for
	// more, however few were in flight when it started itself.
	halfUsedAt time.Time
	// stats for Snapshot
	rejected, unanswered uint64
}

func newLimit(initial float64) limit {
	return limit{value: initial, slowStart: true}
}

// allowed is how many may be in flight, given the caller's cap (0: none).
func (l *limit) allowed(maxLimit, callerCap int) int {
	n := int(l.value)
	if maxLimit > 0 && n > maxLimit {
		n = maxLimit
	}
	if callerCap > 0 && n > callerCap {
		n = callerCap
	}
	return max(n, 1)
}

// markUsed notes, as an attempt starts, whether at least half the limit
// is now in flight.
func (l *limit) markUsed(maxLimit, callerCap int, now time.Time) {
	if l.inFlight*2 >= l.allowed(maxLimit, callerCap) {
		l.halfUsedAt = now
	}
}

// usedSince says whether at least half the limit was in flight at some
// start since started: an attempt started then is evidence for more. A
// claimed batch starts together, and its first attempts found little in
// flight: judged only at their own start, half a round trip's successes
// did not count (32 at a cold destination took it to 83, not 128).
func (l *limit) usedSince(started time.Time) bool {
	return !l.halfUsedAt.Before(started)
}

// sample is what one finished attempt tells one limit.
type sample struct {
	outcome Outcome
	end     time.Time
	load    int // in flight when the attempt started, itself included
	// used: at least half the limit was in flight while the attempt was
	// (usedSince)
	used       bool
	generation uint32 // the limit's generation when the attempt started
	useLatency bool   // a webhook's limit; a destination's ignores latency
	// slowStartStep is what a success adds in slow start.
	slowStartStep float64
	maxLimit      float64
}

func (l *limit) record(s sample) {
	switch s.outcome.Class {
	case Succeeded:
		if s.useLatency {
			if l.queueing(s) {
				l.decrease(s, latencyBackoff, false)
				return
			}
			if l.slow(s.outcome.Latency) {
				return // a slow answer is no evidence for more
			}
		}
		l.grow(s)
	case Rejected:
		l.rejected++
		l.decrease(s, rejectedBackoff, true)
	case Unanswered:
		l.unanswered++
		if s.generation != l.generation {
			l.value = max(1, l.value*unansweredEach)
			return
		}
		l.decrease(s, unansweredBackoff, true)
	}
}

// queueing takes a success's latency into the unloaded latency and the
// round's, and says whether the receiver is queueing: whether the least
// latency of the last round (about one unloaded latency of answers) is
// over latencyTolerance times the unloaded latency. Queueing delays every
// answer of a round, its least one too; jitter and a slow tail do not.
func (l *limit) queueing(s sample) bool {
	lat := max(s.outcome.Latency, 1)
	// Only an attempt that started with half the limit or less in flight
	// may raise the unloaded latency (a busy webhook's window would
	// otherwise ratchet it up to its loaded latency); any may lower it.
	lightly := s.load <= 1 || float64(s.load)*2 <= l.value
	l.minLatency.add(lat, s.end, lightly)
	if l.srtt == 0 {
		l.srtt = lat
	} else {
		l.srtt += time.Duration(srttWeight * float64(lat-l.srtt))
	}
	if l.roundCount == 0 || lat < l.roundMin {
		l.roundMin = lat
	}
	l.roundCount++
	unloaded := l.minLatency.min()
	if l.roundCount < min(roundSamples, int(l.value)) || s.end.Sub(l.roundStart) < unloaded {
		return l.roundQueued
	}
	l.roundQueued = over(l.roundMin, unloaded)
	l.roundStart, l.roundCount = s.end, 0
	return l.roundQueued
}

// slow says whether one answer took over latencyTolerance times the
// unloaded latency.
func (l *limit) slow(lat time.Duration) bool {
	unloaded := l.minLatency.min()
	return unloaded > 0 && over(lat, unloaded)
}

// over says whether lat is over the unloaded latency by both the
// tolerance and the slack.
func over(lat, unloaded time.Duration) bool {
	return float64(lat) > latencyTolerance*float64(unloaded) && lat-unloaded > latencySlack
}

func (l *limit) grow(s sample) {
	if !l.slowStart && s.end.Sub(l.lastDecrease) >= slowStartAfter {
		l.slowStart = true
	}
	// Growth needs evidence: an attempt in flight while at least half the
	// limit of that moment was (usedSince; not the limit of now: in slow
	// start it has grown since, and a round trip's early attempts would
	// not count). A quiet webhook's limit stays where it is.
	if !s.used {
		return
	}
	ceiling := s.maxLimit
	if s.end.Before(l.ceilingUntil) {
		ceiling = min(ceiling, max(1, l.ceiling-1))
	}
	if l.value >= ceiling {
		return
	}
	if l.slowStart {
		l.value += s.slowStartStep
	} else {
		l.value += 1 / l.value
	}
	l.value = min(l.value, ceiling)
}

// decrease starts a new generation unless this attempt started before the
// last decrease (the receiver's answer to load already reacted to).
func (l *limit) decrease(s sample, factor float64, refused bool) {
	if s.generation != l.generation {
		return
	}
	base := min(l.value, float64(s.load))
	l.value = max(1, base*factor)
	l.generation++
	l.lastDecrease = s.end
	l.slowStart = false
	if refused {
		l.ceiling = float64(s.load)
		l.ceilingUntil = s.end.Add(probeAfter)
	}
}

// minWindow is the least latency over the last one or two windows.
type minWindow struct {
	prev, cur time.Duration // 0: no sample
	curStart  time.Time
}

func (w *minWindow) add(lat time.Duration, now time.Time, counts bool) {
	if now.Sub(w.curStart) >= minLatencyWindow {
		if w.cur > 0 {
			w.prev, w.cur = w.cur, 0
		}
		w.curStart = now
	}
	if lat <= 0 {
		lat = 1
	}
	if counts || lat < w.min() || w.min() == 0 {
		if w.cur == 0 || lat < w.cur {
			w.cur = lat
		}
	}
}

func (w *minWindow) min() time.Duration {
	switch {
	case w.prev == 0:
		return w.cur
	case w.cur == 0:
		return w.prev
	}
	return min(w.prev, w.cur)
}
