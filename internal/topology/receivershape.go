package topology

import (
	"fmt"
	"strings"
	"time"
)

// ReceiverKind is how a receiver answers a delivery.
type ReceiverKind string

const (
	// Instant answers 200 at once: a loopback server, the best case.
	Instant ReceiverKind = "instant"
	// Delayed answers 200 after a set delay, at any concurrency: a handler
	// that writes to a database or calls an API.
	Delayed ReceiverKind = "delay"
	// Knee answers 200 after a latency that grows with the requests in
	// flight (Step each, this one included): a receiver with a fixed
	// capacity, where more concurrency only adds queueing.
	Knee ReceiverKind = "knee"
	// Limited holds up to Limit requests at once for the delay each and
	// answers 429 to any request above that, as a rate-limited API does.
	Limited ReceiverKind = "429"
	// Failing answers 500 to every request at once: a broken receiver,
	// whose deliveries spend their retries and end failed. Nothing
	// arrives at it, so it is not among ReceiverKinds (a benchmark waits
	// for arrivals); a soak's failing webhooks point at one.
	Failing ReceiverKind = "500"
)

// ReceiverKinds are the kinds a benchmark can select, by name.
var ReceiverKinds = []ReceiverKind{Instant, Delayed, Knee, Limited}

// Defaults of the receiver shapes.
const (
	DefaultReceiverDelay = 200 * time.Millisecond
	DefaultKneeStep      = 20 * time.Millisecond
	DefaultReceiverLimit = 8
	// maxHold bounds how long a receiver holds one request whatever its
	// shape says, so a runaway knee still ends.
	maxHold = 30 * time.Second
	// refusalGrace is how long after a phase starts a 429 counts as the
	// sender still finding the receiver's limit (Load.RefusedLate counts
	// those after it).
	refusalGrace = 5 * time.Second
)

// ReceiverShape is how a Receiver answers every delivery.
type ReceiverShape struct {
	Kind  ReceiverKind
	Delay time.Duration // Delayed: every answer's; Limited: each admitted request's
	Step  time.Duration // Knee: latency per request in flight
	Limit int           // Limited: requests held at once; the next ones get 429
}

// ReceiverOptions parameterise the shapes; zero fields take the defaults.
type ReceiverOptions struct {
	Delay time.Duration
	Step  time.Duration
	Limit int
}

// ParseReceiverShape reads a shape's kind ("" is Instant) with options.
func ParseReceiverShape(name string, o ReceiverOptions) (ReceiverShape, error) {
	if o.Delay == 0 {
		o.Delay = DefaultReceiverDelay
	}
	if o.Step == 0 {
		o.Step = DefaultKneeStep
	}
	if o.Limit == 0 {
		o.Limit = DefaultReceiverLimit
	}
	if o.Delay < 0 || o.Delay > maxHold || o.Step < 0 || o.Step > maxHold || o.Limit < 0 {
		return ReceiverShape{}, fmt.Errorf("receiver %q: delay and knee step must be between 0 and %s, the limit at least 1", name, maxHold)
	}
	kind := ReceiverKind(name)
	switch kind {
	case "", Instant:
		return ReceiverShape{Kind: Instant}, nil
	case Delayed:
		return ReceiverShape{Kind: Delayed, Delay: o.Delay}, nil
	case Knee:
		return ReceiverShape{Kind: Knee, Step: o.Step}, nil
	case Limited:
		return ReceiverShape{Kind: Limited, Delay: o.Delay, Limit: o.Limit}, nil
	}
	names := make([]string, len(ReceiverKinds))
	for i, k := range ReceiverKinds {
		names[i] = string(k)
	}
	return ReceiverShape{}, fmt.Errorf("unknown receiver %q: want one of %s", name, strings.Join(names, ", "))
}

// ParseReceiverShapes reads a comma-separated list of kinds, each with o.
func ParseReceiverShapes(list string, o ReceiverOptions) ([]ReceiverShape, error) {
	var shapes []ReceiverShape
	for _, name := range strings.Split(list, ",") {
		s, err := ParseReceiverShape(strings.TrimSpace(name), o)
		if err != nil {
			return nil, err
		}
		shapes = append(shapes, s)
	}
	return shapes, nil
}

// Name says the shape and its parameters, for benchmark lines:
// instant, delay-200ms, knee-20ms, 429-above-8-200ms.
func (s ReceiverShape) Name() string {
	switch s.Kind {
	case Delayed:
		return fmt.Sprintf("delay-%s", s.Delay)
	case Knee:
		return fmt.Sprintf("knee-%s", s.Step)
	case Limited:
		return fmt.Sprintf("429-above-%d-%s", s.Limit, s.Delay)
	case Failing:
		return string(Failing)
	}
	return string(Instant)
}

// fails says whether every request gets 500.
func (s ReceiverShape) fails() bool { return s.Kind == Failing }

// admits says whether a request is held when it would make inFlight
// requests in flight (itself included); one that is not gets 429.
func (s ReceiverShape) admits(inFlight int) bool {
	return s.Kind != Limited || inFlight <= s.Limit
}

// hold is how long a request that made inFlight requests in flight (itself
// included) waits before its answer.
func (s ReceiverShape) hold(inFlight int) time.Duration {
	switch s.Kind {
	case Delayed, Limited:
		return s.Delay
	case Knee:
		return min(s.Step*time.Duration(inFlight), maxHold)
	}
	return 0
}

// inFlightMeter follows how many requests a receiver holds: the most at
// once and the time-weighted average since the phase's first request.
type inFlightMeter struct {
	n, max      int
	first, last time.Time     // the phase's first request; the last change
	area        time.Duration // sum of in-flight × time since first
}

// enter notes a request that arrived at now and returns how many are in
// flight with it.
func (m *inFlightMeter) enter(now time.Time) int {
	m.advance(now)
	m.n++
	m.max = max(m.max, m.n)
	return m.n
}

// leave notes a request that was answered (or given up on) at now.
func (m *inFlightMeter) leave(now time.Time) {
	m.advance(now)
	m.n--
}

func (m *inFlightMeter) advance(now time.Time) {
	if m.first.IsZero() {
		m.first, m.last = now, now
	}
	if now.After(m.last) {
		m.area += time.Duration(m.n) * now.Sub(m.last)
		m.last = now
	}
}

// average is the mean number in flight from the first request to the last
// change (0 before any time has passed).
func (m *inFlightMeter) average() float64 {
	span := m.last.Sub(m.first)
	if span <= 0 {
		return float64(m.n)
	}
	return float64(m.area) / float64(span)
}

// restart begins a phase: requests still in flight from the last one stay
// counted, and the phase starts with them.
func (m *inFlightMeter) restart(now time.Time) {
	*m = inFlightMeter{n: m.n, max: m.n}
	if m.n > 0 {
		m.first, m.last = now, now
	}
}
