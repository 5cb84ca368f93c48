package topology_test

import (
	"context"
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
