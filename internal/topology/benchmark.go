package topology

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Workload is one benchmark of a running deployment over its HTTP API: a
// warm-up, a burst of Events events (each delivered to every one of the
// Webhooks subscriptions pointing at Receiver) sent by Concurrency senders
// as fast as they go, then Rate deliveries/s for about ten seconds.
type Workload struct {
	API         API
	Receiver    *Receiver
	AccountID   int64
	Webhooks    int
	Events      int
	Concurrency int
	Rate        float64 // deliveries per second of the paced phase; 0 skips it
	// Idle is how many events the idle phase sends one at a time, each
	// once the last has arrived: the latency of a quiet system (0 skips).
	Idle int
	// CPU returns the CPU time each process of the deployment has used so
	// far (see CPUTime), for CPU per delivery.
	CPU func() map[string]time.Duration
}

// Figures are a workload's results.
type Figures struct {
	Deliveries       int           // of the burst
	Elapsed          time.Duration // from the burst's start to its last arrival
	CPUByProcess     map[string]time.Duration
	Burst            Stats
	PacedDeliveries  int
	Paced            Stats // latencies at Rate
	Rate             float64
	IdleDeliveries   int
	Idle             Stats // latencies one event at a time
	DeliveriesPerSec float64
	CPUMsPerDelivery float64
}

// Run runs the workload and waits for every delivery.
func (w Workload) Run(ctx context.Context) (Figures, error) {
	if w.Events < 1 || w.Webhooks < 1 || w.Concurrency < 1 || w.Rate < 0 {
		return Figures{}, fmt.Errorf("workload: events, webhooks and concurrency must be at least 1, rate not negative")
	}
	// Warm-up: first workflow tasks, connection pools, sticky caches.
	const warm = 20
	if err := w.phase(ctx, "warm", warm, min(4, w.Concurrency), 0); err != nil {
		return Figures{}, fmt.Errorf("warm-up: %w", err)
	}

	f := Figures{Deliveries: w.Events * w.Webhooks, Rate: w.Rate}
	cpu0 := w.CPU()
	start := time.Now()
	if err := w.phase(ctx, "burst", w.Events, w.Concurrency, 0); err != nil {
		return Figures{}, fmt.Errorf("burst: %w", err)
	}
	f.Burst = w.Receiver.Stats()
	f.Elapsed = f.Burst.Last.Sub(start)
	cpu1 := w.CPU()
	f.CPUByProcess = map[string]time.Duration{}
	var cpu time.Duration
	for name, t := range cpu1 {
		f.CPUByProcess[name] = t - cpu0[name]
		cpu += t - cpu0[name]
	}
	f.DeliveriesPerSec = float64(f.Deliveries) / f.Elapsed.Seconds()
	f.CPUMsPerDelivery = float64(cpu.Microseconds()) / 1000 / float64(f.Deliveries)

	if w.Rate > 0 {
		events := max(1, int(w.Rate*10/float64(w.Webhooks)))
		interval := time.Duration(float64(time.Second) * float64(w.Webhooks) / w.Rate)
		if err := w.phase(ctx, "paced", events, w.Concurrency, interval); err != nil {
			return Figures{}, fmt.Errorf("paced: %w", err)
		}
		f.PacedDeliveries = events * w.Webhooks
		f.Paced = w.Receiver.Stats()
	}
	if w.Idle > 0 {
		w.Receiver.Reset()
		prefix := fmt.Sprintf("idle-%d", time.Now().UnixNano())
		for i := range w.Idle {
			time.Sleep(100 * time.Millisecond) // let the system go quiet
			if err := w.API.SendEvents(ctx, w.Receiver, w.AccountID, fmt.Sprintf("%s-%d", prefix, i), 1, 1, 0); err != nil {
				return Figures{}, fmt.Errorf("idle: %w", err)
			}
			if err := w.Receiver.WaitUnique(ctx, (i+1)*w.Webhooks); err != nil {
				return Figures{}, fmt.Errorf("idle: %w", err)
			}
		}
		f.IdleDeliveries = w.Idle * w.Webhooks
		f.Idle = w.Receiver.Stats()
	}
	return f, nil
}

func (w Workload) phase(ctx context.Context, name string, events, concurrency int, interval time.Duration) error {
	w.Receiver.Reset()
	prefix := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	if err := w.API.SendEvents(ctx, w.Receiver, w.AccountID, prefix, events, concurrency, interval); err != nil {
		return err
	}
	return w.Receiver.WaitUnique(ctx, events*w.Webhooks)
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
		m = append(m, Metric{float64(f.Paced.P50.Milliseconds()), "p50-ms@rate"}, Metric{float64(f.Paced.P99.Milliseconds()), "p99-ms@rate"})
	}
	if f.IdleDeliveries > 0 {
		m = append(m, Metric{float64(f.Idle.P99.Milliseconds()), "p99-ms@idle"})
	}
	return m
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
	names := make([]string, 0, len(f.CPUByProcess))
	for n := range f.CPUByProcess {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(f.CPUByProcess[b] - f.CPUByProcess[a]) })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %s", n, f.CPUByProcess[n].Round(10*time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}
