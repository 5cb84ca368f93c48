package topology_test

import (
	"context"
	"fmt"
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
	rate := float64(envInt("TOPOLOGY_RATE", 150))
	d := newDeployment(b, 2, webhooks)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// Warm-up: first workflow tasks, connection pools, sticky caches.
	if err := d.ingest(ctx, "warm", 20, 4, 0); err != nil {
		b.Fatal(err)
	}
	if err := d.receiver.WaitUnique(ctx, 20*webhooks); err != nil {
		b.Fatal(err)
	}
	d.receiver.Reset()

	cpu0 := d.cpuTimes()
	b.ResetTimer()
	start := time.Now()
	if err := d.ingest(ctx, "burst", events, 32, 0); err != nil {
		b.Fatal(err)
	}
	if err := d.receiver.WaitUnique(ctx, events*webhooks); err != nil {
		b.Fatal(err)
	}
	burst := d.receiver.Stats()
	elapsed := burst.Last.Sub(start)
	b.StopTimer()
	cpu := total(d.cpuTimes()) - total(cpu0)
	perSec := float64(events*webhooks) / elapsed.Seconds()
	b.ReportMetric(perSec, "deliveries/s")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(events*webhooks), "cpu-ms/delivery")
	b.Logf("burst: %d deliveries in %s = %.0f/s; p50 %s p99 %s; CPU %s (%s)", events*webhooks, elapsed.Round(time.Millisecond), perSec,
		burst.P50.Round(time.Millisecond), burst.P99.Round(time.Millisecond), cpu.Round(time.Millisecond), d.cpuSplit(cpu0))

	// Paced: rate deliveries/s for ~10 seconds.
	d.receiver.Reset()
	paced := int(rate * 10 / float64(webhooks))
	interval := time.Duration(float64(time.Second) * float64(webhooks) / rate)
	if err := d.ingest(ctx, "paced", paced, 32, interval); err != nil {
		b.Fatal(err)
	}
	if err := d.receiver.WaitUnique(ctx, paced*webhooks); err != nil {
		b.Fatal(err)
	}
	st := d.receiver.Stats()
	b.ReportMetric(float64(st.P50.Milliseconds()), "p50-ms@rate")
	b.ReportMetric(float64(st.P99.Milliseconds()), "p99-ms@rate")
	b.Logf("paced at %.0f deliveries/s: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s, duplicates %d",
		rate, paced*webhooks, st.P50.Round(time.Millisecond), st.P99.Round(time.Millisecond), st.Max.Round(time.Millisecond), st.Duplicates)
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

func total(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, v := range m {
		t += v
	}
	return t
}

// cpuSplit says how much CPU each process used since before.
func (d *deployment) cpuSplit(before map[string]time.Duration) string {
	now := d.cpuTimes()
	s := ""
	for _, name := range []string{"temporal", "postgres", "api", "worker-1", "worker-2"} {
		if _, ok := now[name]; ok {
			s += fmt.Sprintf("%s %s ", name, (now[name] - before[name]).Round(10*time.Millisecond))
		}
	}
	return s
}
