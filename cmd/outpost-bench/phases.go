package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// phase is one measured burst: its name in the output, and the events it
// publishes (each with the destination it must reach).
type phase struct {
	shape  string
	tenant string // whose attempts the log store must hold afterwards
	events []event
	want   map[string]string // event id -> destination id
}

// plan is the phases of one receiver, in order, with the destinations they
// need, all made before the first phase.
type plan struct {
	warmup       phase
	phases       []phase
	destinations []destination
}

// spreadRoutes are the ways a spread event can find its one destination
// among the tenant's thousands.
const (
	routeDestination = "destination" // the publish names it (destination_id)
	routeFilter      = "filter"      // the destination's filter matches the event's jobId
)

// newPlan lays out the warm-up and the three phases for receiver recv: n
// events to one destination; n events, each to its own cold destination of a
// tenant that has n; n events to the first destination again.
func newPlan(recv *receiver, run, recvName string, n, warmup int, route string) plan {
	var p plan
	addDest := func(tenant, id string, filter map[string]any) destination {
		d := destination{tenant: tenant, id: id, url: recv.url(id), secret: randomHex(32), filter: filter}
		p.destinations = append(p.destinations, d)
		return d
	}
	prefix := run + "-" + recvName
	warm := addDest(prefix+"-warm", prefix+"-warm-d", nil)
	p.warmup = concentratedPhase("warmup", warm, prefix+"-warm-e", warmup)
	one := addDest(prefix+"-one", prefix+"-one-d", nil)
	p.phases = append(p.phases, concentratedPhase("concentrated", one, prefix+"-c1-e", n))

	spread := phase{shape: "spread", tenant: prefix + "-spread", want: map[string]string{}}
	for i := range n {
		job := strconv.Itoa(i)
		var filter map[string]any
		if route == routeFilter {
			filter = map[string]any{"data": map[string]any{"jobId": job}}
		}
		d := addDest(spread.tenant, fmt.Sprintf("%s-spread-d%d", prefix, i), filter)
		e := event{id: fmt.Sprintf("%s-s-e%d", prefix, i), tenant: d.tenant, jobID: job}
		if route == routeDestination {
			e.destination = d.id
		}
		spread.events = append(spread.events, e)
		spread.want[e.id] = d.id
	}
	p.phases = append(p.phases, spread)
	p.phases = append(p.phases, concentratedPhase("concentrated-again", one, prefix+"-c2-e", n))
	return p
}

// concentratedPhase is n events to tenant d.tenant, which has d alone: each
// matches it by topic.
func concentratedPhase(shape string, d destination, idPrefix string, n int) phase {
	ph := phase{shape: shape, tenant: d.tenant, want: make(map[string]string, n)}
	for i := range n {
		e := event{id: fmt.Sprintf("%s%d", idPrefix, i), tenant: d.tenant, jobID: "42"}
		ph.events = append(ph.events, e)
		ph.want[e.id] = d.id
	}
	return ph
}

// provision makes the plan's tenants and destinations through Outpost's API,
// workers at a time, and tells the receiver their secrets.
func provision(ctx context.Context, api outpostAPI, recv *receiver, p plan, workers int) error {
	tenants := map[string]bool{}
	for _, d := range p.destinations {
		if !tenants[d.tenant] {
			tenants[d.tenant] = true
			if err := api.upsertTenant(ctx, d.tenant); err != nil {
				return fmt.Errorf("provision: %w", err)
			}
		}
		recv.addDestination(d.id, d.secret)
	}
	return forEach(ctx, len(p.destinations), workers, func(i int) error {
		return api.createDestination(ctx, p.destinations[i])
	})
}

// forEach calls f(0) ... f(n-1) from workers goroutines and returns the
// first error; after one, no new call starts.
func forEach(ctx context.Context, n, workers int, f func(i int) error) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		once   sync.Once
		first  error
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// figures is what one phase measured.
type figures struct {
	events, arrived                    int
	elapsed                            time.Duration // first publish to last arrival
	boxTicks, stackTicks               uint64
	p50, p99                           time.Duration
	dups, unsigned, misrouted, unknown int
	stalled                            bool
	logged                             time.Duration // last arrival to the attempts in the log store; <0: not waited for
	loggedStackTicks                   uint64        // the stack's, first publish to the attempts logged
}

// measure runs phase ph: its events from senders goroutines, one per
// publish request, then the wait for their arrivals and, with logs set, for
// their attempts in Outpost's log store.
func measure(ctx context.Context, api outpostAPI, recv *receiver, ph phase, o options, logs *logCounter) (figures, error) {
	var logBase int64
	if logs != nil {
		var err error
		if logBase, err = logs.count(ctx, ph.tenant); err != nil {
			return figures{}, err
		}
	}
	t := newTracker(ph.want)
	recv.track(t)
	defer recv.track(nil)
	cpu0, err := readCPU(o.stack)
	if err != nil {
		return figures{}, err
	}
	start := time.Now()
	err = forEach(ctx, len(ph.events), o.senders, func(i int) error {
		if err := api.publish(ctx, ph.events[i]); err != nil {
			return err
		}
		t.accept(ph.events[i].id, time.Now())
		return nil
	})
	if err != nil {
		return figures{}, fmt.Errorf("%s: publish: %w", ph.shape, err)
	}
	waitErr := t.wait(ctx, o.drain)
	cpu1, err := readCPU(o.stack)
	if err != nil {
		return figures{}, err
	}
	if waitErr != nil && !errors.Is(waitErr, errStalled) {
		return figures{}, fmt.Errorf("%s: wait for arrivals: %w", ph.shape, waitErr)
	}
	f := t.figures(start)
	f.stalled = waitErr != nil
	f.boxTicks, f.stackTicks = cpu1.since(cpu0)
	f.logged = -1
	if logs != nil && !f.stalled {
		waited, err := logs.waitFor(ctx, ph.tenant, logBase+int64(len(ph.events)), o.logWait)
		if err != nil {
			return f, fmt.Errorf("%s: %w", ph.shape, err)
		}
		cpu2, err := readCPU(o.stack)
		if err != nil {
			return f, err
		}
		_, stack := cpu2.since(cpu0)
		f.logged, f.loggedStackTicks = waited, stack
	}
	return f, nil
}

// figures summarises the tracker's arrivals for a phase that began at start.
func (t *tracker) figures(start time.Time) figures {
	lat := t.latencies()
	t.mu.Lock()
	defer t.mu.Unlock()
	return figures{
		events: len(t.want), arrived: len(t.arrived), elapsed: t.last.Sub(start),
		p50: percentile(lat, 50), p99: percentile(lat, 99),
		dups: t.dups, unsigned: t.unsigned, misrouted: t.misrouted, unknown: t.unknown,
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
