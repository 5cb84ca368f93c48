package topology

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Workload is one benchmark of a running deployment over its HTTP API: a
// warm-up, a burst of events sent by Concurrency senders as fast as they
// go, a paced phase (about ten seconds at a rate of deliveries), and an
// idle phase of events one at a time. After each phase every delivery must
// have arrived at Receiver exactly once (Receiver.Check).
type Workload struct {
	API         API
	Receiver    *Receiver
	Traffic     Traffic
	Concurrency int
	// CPU returns the CPU time each process of the deployment has used so
	// far (see CPUTime), for CPU per delivery.
	CPU func() map[string]time.Duration
	// Switches, when set, returns the context switches each process has
	// made so far (procstat.Switches), for the paced phase's switches per
	// delivery: at a steady rate most of a process's CPU goes with them
	// (docs/performance.md, "The floor of a request").
	Switches func() map[string]int64
	// Statements, when set, reads what each database statement has cost
	// so far (ReadStatements), for the burst's cost per statement.
	Statements func(ctx context.Context) (Statements, error)
	// Tables, when set, reads what each table of the app's database has
	// been written so far (ReadTables), for the burst's rows and index
	// writes per delivery.
	Tables func(ctx context.Context) (Tables, error)
	// Temporal, when set, reads the requests the deployment's processes
	// have made of Temporal so far (ReadTemporalRequests), for the burst's
	// requests per delivery by operation.
	Temporal func(ctx context.Context) (TemporalRequests, error)
	// AtRest > 0 measures each process's CPU for that long before the
	// burst, with nothing sent: what the processes spend anyway (timers,
	// polls, background work), to read the burst's CPU by.
	AtRest time.Duration
	// Drain > 0 bounds the burst, for receivers that refuse or answer
	// slowly: it waits at most Drain after its last event was accepted,
	// reports the deliveries still missing instead of failing, and then
	// skips the later phases (their arrivals would mix). The figures then
	// include what the receiver saw (Figures.Load).
	Drain time.Duration
}

// Traffic is each phase's events; Provision makes it from a Plan.
type Traffic struct {
	Warm, Burst []Event
	// Paced events are sent PacedInterval apart, Rate deliveries/s in all
	// (none: no paced phase).
	Paced         []Event
	PacedInterval time.Duration
	Rate          float64
	// Idle events are sent one at a time, each once the last has arrived
	// and 100 ms have passed: the latency of a quiet system (none: no idle
	// phase).
	Idle []Event
}

// Deliveries is how many deliveries events make.
func Deliveries(events []Event) int {
	n := 0
	for _, e := range events {
		n += len(e.Webhooks)
	}
	return n
}

// Figures are a workload's results.
type Figures struct {
	Deliveries   int           // of the burst
	Elapsed      time.Duration // from the burst's start to its last arrival
	CPUByProcess map[string]time.Duration
	// CPUAtRest is what each process would have used over Elapsed with
	// nothing sent (with Workload.AtRest): part of CPUByProcess.
	CPUAtRest       map[string]time.Duration
	Burst           Stats
	PacedDeliveries int
	Paced           Stats // latencies at Rate
	// PacedCPU is what each process used over the paced phase (the steady
	// rate's cost, which a burst does not show: wake-ups, workflow tasks
	// and claims that grow with time rather than deliveries), and
	// PacedTemporal its requests of Temporal per delivery, PacedStatements
	// its database statements per delivery.
	PacedCPU         map[string]time.Duration
	PacedSwitches    map[string]int64 // with Workload.Switches
	PacedTemporal    []TemporalRequestCost
	PacedStatements  []StatementCost
	Rate             float64
	IdleDeliveries   int
	Idle             Stats // latencies one event at a time
	DeliveriesPerSec float64
	CPUMsPerDelivery float64
	// With Drain: what the receiver saw during the burst, how many
	// deliveries were still missing when the wait ended, and how long after
	// the burst's last event was accepted the last delivery arrived.
	Drained bool
	Load    Load
	Missing int
	Settled time.Duration
	// Statements is the burst's database statements per delivery (with
	// Workload.Statements), or StatementsErr why there are none.
	Statements    []StatementCost
	StatementsErr error
	// Tables is the burst's writes per delivery to each table (with
	// Workload.Tables).
	Tables []TableCost
	// Temporal is the burst's requests of Temporal per delivery by
	// operation (with Workload.Temporal).
	Temporal []TemporalRequestCost
}

// statementsTop is how many statements the figures name; the rest of the
// service's are one line.
const statementsTop = 8

// settleTarget is how soon after a burst every delivery should have arrived
// (Figures.AllWithinMinute).
const settleTarget = time.Minute

// AllWithinMinute says whether every delivery of the burst arrived within a
// minute of its last event's acceptance.
func (f Figures) AllWithinMinute() bool { return f.Missing == 0 && f.Settled <= settleTarget }

// stall is how long a phase waits without a single arrival before it
// gives up (a bounded run, and a report of what is missing).
const stall = 2 * time.Minute

// Run runs the workload and waits for every delivery.
func (w Workload) Run(ctx context.Context) (Figures, error) {
	t := w.Traffic
	if Deliveries(t.Burst) < 1 || w.Concurrency < 1 || t.Rate < 0 {
		return Figures{}, fmt.Errorf("workload: the burst must make deliveries, concurrency be at least 1, rate not negative")
	}
	// Warm-up: first workflow tasks, connection pools, sticky caches.
	if err := w.phase(ctx, "warm", t.Warm, min(4, w.Concurrency), 0); err != nil {
		return Figures{}, fmt.Errorf("warm-up: %w", err)
	}

	f, err := w.burst(ctx)
	if err != nil {
		return Figures{}, fmt.Errorf("burst: %w", err)
	}
	if f.Missing > 0 {
		return f, nil
	}

	if len(t.Paced) > 0 {
		if err := w.paced(ctx, &f); err != nil {
			return Figures{}, fmt.Errorf("paced: %w", err)
		}
	}
	if len(t.Idle) > 0 {
		w.Receiver.Reset()
		prefix := fmt.Sprintf("idle-%d", time.Now().UnixNano())
		for i := range t.Idle {
			time.Sleep(100 * time.Millisecond) // let the system go quiet
			if err := w.API.Send(ctx, w.Receiver, fmt.Sprintf("%s-%d", prefix, i), t.Idle[i:i+1], 1, 0); err != nil {
				return Figures{}, fmt.Errorf("idle: %w", err)
			}
			if err := w.Receiver.WaitExpected(ctx, stall); err != nil {
				return Figures{}, fmt.Errorf("idle: %w", err)
			}
		}
		if err := w.Receiver.Check(); err != nil {
			return Figures{}, fmt.Errorf("idle: %w", err)
		}
		f.IdleDeliveries = Deliveries(t.Idle)
		f.Idle = w.Receiver.Stats()
	}
	return f, nil
}

// paced sends the paced events at the traffic's rate and measures the
// phase: latencies, each process's CPU and the requests of Temporal.
func (w Workload) paced(ctx context.Context, f *Figures) error {
	t := w.Traffic
	var temporal0 TemporalRequests
	if w.Temporal != nil {
		temporal0, _ = w.Temporal(ctx) // figures without them rather than none
	}
	var statements0 Statements
	if w.Statements != nil {
		statements0, _ = w.Statements(ctx)
	}
	var switches0 map[string]int64
	if w.Switches != nil {
		switches0 = w.Switches()
	}
	cpu0 := w.CPU()
	if err := w.phase(ctx, "paced", t.Paced, w.Concurrency, t.PacedInterval); err != nil {
		return err
	}
	f.PacedDeliveries = Deliveries(t.Paced)
	f.Paced = w.Receiver.Stats()
	f.PacedCPU = cpuSince(cpu0, w.CPU())
	if switches0 != nil {
		f.PacedSwitches = map[string]int64{}
		for name, n := range w.Switches() {
			f.PacedSwitches[name] = n - switches0[name]
		}
	}
	if statements0 != nil {
		if statements1, err := w.Statements(ctx); err == nil {
			f.PacedStatements = statements1.Since(statements0).PerDelivery(f.PacedDeliveries, statementsTop)
		}
	}
	if w.Temporal != nil && temporal0 != nil {
		if temporal1, err := w.Temporal(ctx); err == nil {
			f.PacedTemporal = temporal1.Since(temporal0).PerDelivery(f.PacedDeliveries)
		}
	}
	return nil
}

// cpuSince is each process's CPU from before to after.
func cpuSince(before, after map[string]time.Duration) map[string]time.Duration {
	used := make(map[string]time.Duration, len(after))
	for name, c := range after {
		used[name] = c - before[name]
	}
	return used
}

// PacedCPUMsPerDelivery is the paced phase's CPU per delivery over every
// process (0 without a paced phase).
func (f Figures) PacedCPUMsPerDelivery() float64 {
	if f.PacedDeliveries == 0 {
		return 0
	}
	var cpu time.Duration
	for _, c := range f.PacedCPU {
		cpu += c
	}
	return float64(cpu.Microseconds()) / 1000 / float64(f.PacedDeliveries)
}

// PacedCPUSplit is the paced phase's CPU per delivery by process, the
// largest first.
func (f Figures) PacedCPUSplit() string {
	names := largestFirst(f.PacedCPU)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f ms", n, float64(f.PacedCPU[n].Microseconds())/1000/float64(max(f.PacedDeliveries, 1))))
	}
	return strings.Join(parts, ", ")
}

// PacedSwitchesSplit is the paced phase's context switches per delivery by
// process, in the order of PacedCPUSplit ("" without Workload.Switches).
func (f Figures) PacedSwitchesSplit() string {
	if f.PacedSwitches == nil {
		return ""
	}
	var parts []string
	for _, n := range largestFirst(f.PacedCPU) {
		if sw, ok := f.PacedSwitches[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", n, float64(sw)/float64(max(f.PacedDeliveries, 1))))
		}
	}
	return strings.Join(parts, ", ")
}

// cpuAtRest is each process's CPU a second of CPU time per second over
// AtRest with nothing sent (nil without AtRest).
func (w Workload) cpuAtRest(ctx context.Context) (map[string]float64, error) {
	if w.AtRest <= 0 {
		return nil, nil
	}
	before := w.CPU()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(w.AtRest):
	}
	after := w.CPU()
	rate := map[string]float64{}
	for name, c := range after {
		rate[name] = float64(c-before[name]) / float64(w.AtRest)
	}
	return rate, nil
}

// burst sends the burst and measures it: its rate and CPU to the last
// arrival, and with Drain, what the receiver saw.
func (w Workload) burst(ctx context.Context) (Figures, error) {
	f := Figures{Deliveries: Deliveries(w.Traffic.Burst), Rate: w.Traffic.Rate, Drained: w.Drain > 0}
	var stmts0 Statements
	if w.Statements != nil {
		stmts0, f.StatementsErr = w.Statements(ctx)
	}
	var tables0 Tables
	if w.Tables != nil {
		tables0, _ = w.Tables(ctx) // figures without them rather than none
	}
	var temporal0 TemporalRequests
	if w.Temporal != nil {
		temporal0, _ = w.Temporal(ctx) // figures without them rather than none
	}
	restRate, err := w.cpuAtRest(ctx)
	if err != nil {
		return Figures{}, err
	}
	cpu0 := w.CPU()
	start := time.Now()
	if w.Drain > 0 {
		if err := w.drainedPhase(ctx, &f); err != nil {
			return Figures{}, err
		}
	} else if err := w.phase(ctx, "burst", w.Traffic.Burst, w.Concurrency, 0); err != nil {
		return Figures{}, err
	}
	f.Burst = w.Receiver.Stats()
	cpu1 := w.CPU()
	if w.Statements != nil && f.StatementsErr == nil {
		var stmts1 Statements
		if stmts1, f.StatementsErr = w.Statements(ctx); f.StatementsErr == nil {
			f.Statements = stmts1.Since(stmts0).PerDelivery(f.Deliveries-f.Missing, statementsTop)
		}
	}
	if w.Tables != nil && tables0 != nil {
		if tables1, err := w.Tables(ctx); err == nil {
			f.Tables = tables1.PerDelivery(tables0, f.Deliveries-f.Missing)
		}
	}
	if w.Temporal != nil && temporal0 != nil {
		if temporal1, err := w.Temporal(ctx); err == nil {
			f.Temporal = temporal1.Since(temporal0).PerDelivery(f.Deliveries - f.Missing)
		}
	}
	f.CPUByProcess = map[string]time.Duration{}
	var cpu time.Duration
	for name, c := range cpu1 {
		f.CPUByProcess[name] = c - cpu0[name]
		cpu += c - cpu0[name]
	}
	arrived := f.Deliveries - f.Missing
	f.Elapsed = f.Burst.Last.Sub(start)
	if restRate != nil {
		f.CPUAtRest = map[string]time.Duration{}
		for name, r := range restRate {
			f.CPUAtRest[name] = time.Duration(r * float64(f.Elapsed))
		}
	}
	if arrived > 0 && f.Elapsed > 0 {
		f.DeliveriesPerSec = float64(arrived) / f.Elapsed.Seconds()
		f.CPUMsPerDelivery = float64(cpu.Microseconds()) / 1000 / float64(arrived)
	}
	return f, nil
}

// drainedPhase sends the burst and waits up to Drain after its last event
// was accepted; deliveries missing then are reported, not failed.
func (w Workload) drainedPhase(ctx context.Context, f *Figures) error {
	w.Receiver.Reset()
	prefix := fmt.Sprintf("burst-%d", time.Now().UnixNano())
	if err := w.API.Send(ctx, w.Receiver, prefix, w.Traffic.Burst, w.Concurrency, 0); err != nil {
		return err
	}
	sent := time.Now()
	wctx, cancel := context.WithTimeout(ctx, w.Drain)
	defer cancel()
	_ = w.Receiver.WaitExpected(wctx, 0) // bounded by Drain; what is missing is a figure
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.Load = w.Receiver.Load()
	arrived, expected := w.Receiver.Progress()
	f.Missing = expected - arrived
	f.Settled = max(0, w.Receiver.Stats().Last.Sub(sent))
	return w.Receiver.check(false)
}

// phase sends events and waits until each of their deliveries arrived,
// then checks that nothing else did.
func (w Workload) phase(ctx context.Context, name string, events []Event, concurrency int, interval time.Duration) error {
	w.Receiver.Reset()
	prefix := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	if err := w.API.Send(ctx, w.Receiver, prefix, events, concurrency, interval); err != nil {
		return err
	}
	if err := w.Receiver.WaitExpected(ctx, stall); err != nil {
		return fmt.Errorf("%w\n%v", err, w.Receiver.Check())
	}
	return w.Receiver.Check()
}

// Metric is one figure of a benchmark result, in Go benchmark style.
type Metric struct {
	Value float64
	Unit  string
}

// Metrics are the figures a benchmark reports: deliveries/s and
// cpu-ms/delivery of the burst, and ingest-to-arrival latency at the rate.
func (f Figures) Metrics() []Metric {
	m := []Metric{{f.DeliveriesPerSec, "deliveries/s"}, {f.CPUMsPerDelivery, "cpu-ms/delivery"}}
	if f.PacedDeliveries > 0 {
		m = append(m, Metric{float64(f.Paced.P50.Milliseconds()), "p50-ms@rate"}, Metric{float64(f.Paced.P99.Milliseconds()), "p99-ms@rate"},
			Metric{f.PacedCPUMsPerDelivery(), "cpu-ms/delivery@rate"})
	}
	if f.IdleDeliveries > 0 {
		m = append(m, Metric{float64(f.Idle.P99.Milliseconds()), "p99-ms@idle"})
	}
	if f.Drained {
		within := 0.0
		if f.AllWithinMinute() {
			within = 1
		}
		l := f.Load
		m = append(m,
			Metric{float64(f.Burst.P50.Milliseconds()), "p50-ms@burst"}, Metric{float64(f.Burst.P99.Milliseconds()), "p99-ms@burst"},
			Metric{float64(l.Requests), "requests"}, Metric{float64(l.Refused), "429s"}, Metric{float64(l.RefusedLate), "429s-after-5s"},
			Metric{float64(l.Timeouts), "timeouts"}, Metric{float64(l.MaxInFlight), "max-in-flight"}, Metric{l.AvgInFlight, "avg-in-flight"},
			Metric{float64(f.Missing), "missing"}, Metric{within, "all-within-1m"})
	}
	return m
}

// LoadSummary says in words what the receiver saw of a drained burst.
func (f Figures) LoadSummary() string {
	l := f.Load
	within := "yes"
	if !f.AllWithinMinute() {
		within = "no"
	}
	return fmt.Sprintf("%d requests for %d deliveries, %d answered 429 (%d after the first %s), %d timed out; in flight max %d avg %.1f; "+
		"%d missing at the end of the wait; last arrival %s after the last event was accepted; all within a minute: %s",
		l.Requests, f.Deliveries, l.Refused, l.RefusedLate, refusalGrace, l.Timeouts, l.MaxInFlight, l.AvgInFlight,
		f.Missing, f.Settled.Round(time.Millisecond), within)
}

// BenchmarkLine formats metrics as `go test -bench` prints a result of one
// iteration, so benchstat and the like read the output of either harness.
func BenchmarkLine(name string, metrics []Metric) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%8d", name, 1)
	for _, m := range metrics {
		fmt.Fprintf(&b, "\t%12.4g %s", m.Value, m.Unit)
	}
	return b.String()
}

// CPUSplit says how much CPU each process used, largest first.
func (f Figures) CPUSplit() string {
	names := largestFirst(f.CPUByProcess)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		part := fmt.Sprintf("%s %s", n, f.CPUByProcess[n].Round(10*time.Millisecond))
		if rest, ok := f.CPUAtRest[n]; ok {
			part += fmt.Sprintf(" (at rest %s)", rest.Round(10*time.Millisecond))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// largestFirst are the processes of a CPU split, the largest first.
func largestFirst(cpu map[string]time.Duration) []string {
	names := make([]string, 0, len(cpu))
	for n := range cpu {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(cpu[b] - cpu[a]) })
	return names
}
