package topology_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// BenchmarkTopology_Deliveries measures the production topology (1 API, 2
// workers, Temporal on PostgreSQL): a burst for sustained deliveries/s, then
// a paced phase (TOPOLOGY_RATE deliveries/s, default 150) for ingest-to-
// arrival latency. Run with -benchtime=1x; sizes come from TOPOLOGY_EVENTS
// (default 500) and TOPOLOGY_WEBHOOKS (default 2). CPU per delivery counts
// every process of the deployment, the local PostgreSQL included (Temporal's
// stores and the app database; other clients of it count too).
func BenchmarkTopology_Deliveries(b *testing.B) {
	events, webhooks := envInt("TOPOLOGY_EVENTS", 500), envInt("TOPOLOGY_WEBHOOKS", 2)
	d := newDeployment(b, 2, webhooks)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	w := topology.Workload{
		API: d.API, Receiver: d.receiver, AccountID: d.account, Webhooks: webhooks,
		Events: events, Concurrency: 32, Rate: float64(envInt("TOPOLOGY_RATE", 150)), CPU: d.cpuTimes,
		Idle: envInt("TOPOLOGY_IDLE_EVENTS", 100),
	}
	b.ResetTimer()
	f, err := w.Run(ctx)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range f.Metrics() {
		b.ReportMetric(m.Value, m.Unit)
	}
	b.Logf("burst: %d deliveries in %s; p50 %s p99 %s; CPU %s", f.Deliveries, f.Elapsed.Round(time.Millisecond),
		f.Burst.P50.Round(time.Millisecond), f.Burst.P99.Round(time.Millisecond), f.CPUSplit())
	b.Logf("paced at %.0f deliveries/s: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s, duplicates %d",
		f.Rate, f.PacedDeliveries, f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond), f.Paced.Duplicates)
	b.Logf("idle, one event at a time: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s",
		f.IdleDeliveries, f.Idle.P50.Round(time.Millisecond), f.Idle.P99.Round(time.Millisecond), f.Idle.Max.Round(time.Millisecond))
}

// BenchmarkTopology_Isolation is the A/B scenario: account B (healthy, one
// webhook) sends TOPOLOGY_B_EVENTS (50) alone; then account A sends
// TOPOLOGY_A_EVENTS (300) to a receiver that never answers, and B sends
// its events again while A's attempts hang. It reports B's ingest-to-
// arrival p99 alone and beside A, and their difference (the target: within
// 500 ms). Delivery settings are the production defaults (10s timeout).
func BenchmarkTopology_Isolation(b *testing.B) {
	d := newDeployment(b, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	aEvents, bEvents := envInt("TOPOLOGY_A_EVENTS", 300), envInt("TOPOLOGY_B_EVENTS", 50)

	hung := hungReceiver(b)
	aAccount, aAPI := d.newAccount(ctx)
	if _, _, err := aAPI.CreateWebhook(ctx, aAccount, "never answers", hung); err != nil {
		b.Fatal(err)
	}
	bPhase := func(name string) topology.Stats {
		d.receiver.Reset()
		if err := d.API.SendEvents(ctx, d.receiver, d.account, fmt.Sprintf("%s-%d", name, time.Now().UnixNano()), bEvents, 8, 0); err != nil {
			b.Fatal(err)
		}
		if err := d.receiver.WaitUnique(ctx, bEvents); err != nil {
			b.Fatal(err)
		}
		return d.receiver.Stats()
	}
	bPhase("warm")
	b.ResetTimer()
	alone := bPhase("b-alone")
	sink, err := topology.StartReceiver(ctx) // A's acceptances are noted here; nothing arrives
	if err != nil {
		b.Fatal(err)
	}
	if err := aAPI.SendEvents(ctx, sink, aAccount, fmt.Sprintf("a-%d", time.Now().UnixNano()), aEvents, 32, 0); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // A's first attempts are in flight and hanging
	beside := bPhase("b-beside-a")
	b.StopTimer()
	b.ReportMetric(float64(alone.P99.Milliseconds()), "p99-ms-B-alone")
	b.ReportMetric(float64(beside.P99.Milliseconds()), "p99-ms-B-beside-A")
	b.ReportMetric(float64((beside.P99 - alone.P99).Milliseconds()), "p99-ms-difference")
	b.Logf("B alone: p50 %s p99 %s; B beside A's %d hanging events: p50 %s p99 %s",
		alone.P50.Round(time.Millisecond), alone.P99.Round(time.Millisecond), aEvents,
		beside.P50.Round(time.Millisecond), beside.P99.Round(time.Millisecond))
}

// hungReceiver is an endpoint that never answers (until the test ends).
func hungReceiver(tb testing.TB) string {
	tb.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	tb.Cleanup(func() { close(done); srv.Close() })
	return srv.URL + "/hook"
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cpuTimes is the CPU time used so far by each process of the deployment.
func (d *deployment) cpuTimes() map[string]time.Duration {
	m := map[string]time.Duration{
		"temporal": topology.CPUTime(d.cluster.Server.PID()),
		"api":      topology.CPUTime(d.api.PID()),
		// Temporal's persistence and visibility and the app database.
		"postgres": topology.PostgresCPUTime(),
	}
	for _, w := range d.workers {
		m[w.Name] = topology.CPUTime(w.PID())
	}
	return m
}
