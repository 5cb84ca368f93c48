package topology_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// BenchmarkTopology_Deliveries measures the production topology (1 API, 2
// workers, Temporal on PostgreSQL) under each workload shape of
// TOPOLOGY_SHAPE (concentrated by default; a comma-separated list runs each
// on a deployment of its own): a burst for sustained deliveries/s and CPU
// per delivery, a paced phase (TOPOLOGY_RATE deliveries/s, default 150) and
// an idle phase (TOPOLOGY_IDLE_EVENTS, default 100) for ingest-to-arrival
// latency. Run with -benchtime=1x; TOPOLOGY_EVENTS and TOPOLOGY_WEBHOOKS
// size the burst (topology.DefaultSize when unset). CPU per delivery counts
// every process of the deployment, the local PostgreSQL included
// (Temporal's stores and the app database; other clients of it count too).
func BenchmarkTopology_Deliveries(b *testing.B) {
	var shapes []topology.Shape
	for _, name := range strings.Split(os.Getenv("TOPOLOGY_SHAPE"), ",") {
		s, err := topology.ParseShape(strings.TrimSpace(name))
		if err != nil {
			b.Fatalf("TOPOLOGY_SHAPE: %v", err)
		}
		shapes = append(shapes, s)
	}
	size := topology.Size{
		Events: envInt("TOPOLOGY_EVENTS", 0), Webhooks: envInt("TOPOLOGY_WEBHOOKS", 0),
		Rate: float64(envInt("TOPOLOGY_RATE", 150)), Idle: envInt("TOPOLOGY_IDLE_EVENTS", 100),
	}
	for _, shape := range shapes {
		b.Run("shape="+string(shape), func(b *testing.B) { benchmarkShape(b, shape, size) })
	}
}

func benchmarkShape(b *testing.B, shape topology.Shape, size topology.Size) {
	plan, err := topology.NewPlan(shape, size)
	if err != nil {
		b.Fatal(err)
	}
	d := newDeployment(b, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	parts := d.provision(ctx, plan)
	figures := make([]topology.Figures, len(parts))
	for i, part := range parts {
		measure := func(b *testing.B) {
			w := topology.Workload{API: d.API, Receiver: d.receiver, Traffic: part.Traffic, Concurrency: 32, CPU: d.cpuTimes}
			b.ResetTimer()
			f, err := w.Run(ctx)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range f.Metrics() {
				b.ReportMetric(m.Value, m.Unit)
			}
			logFigures(b, shape, part.Name, f)
			figures[i] = f
		}
		if part.Name == "" {
			measure(b)
		} else {
			b.Run(part.Name, measure)
		}
	}
	if shape == topology.BigAccount && len(figures) == 2 && figures[0].CPUMsPerDelivery > 0 {
		b.Logf("bigaccount: CPU per delivery %s / %s = %.2f", parts[1].Name, parts[0].Name,
			figures[1].CPUMsPerDelivery/figures[0].CPUMsPerDelivery)
	}
}

// provision makes plan's accounts and webhooks in the deployment's
// database, pointing at its receiver.
func (d *deployment) provision(ctx context.Context, plan topology.Plan) []topology.Part {
	d.t.Helper()
	p, err := topology.NewProvisioner(d.db.Pool, d.secretKeys)
	if err != nil {
		d.t.Fatal(err)
	}
	start := time.Now()
	parts, err := p.Provision(ctx, plan, d.receiver)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Logf("%s: %d accounts and %d webhooks made in %s", plan.Shape, len(plan.Accounts), len(plan.Webhooks), time.Since(start).Round(time.Millisecond))
	return parts
}

func logFigures(b *testing.B, shape topology.Shape, part string, f topology.Figures) {
	b.Helper()
	name := string(shape)
	if part != "" {
		name += " " + part
	}
	b.Logf("%s burst: %d deliveries in %s; p50 %s p99 %s; CPU %s", name, f.Deliveries, f.Elapsed.Round(time.Millisecond),
		f.Burst.P50.Round(time.Millisecond), f.Burst.P99.Round(time.Millisecond), f.CPUSplit())
	b.Logf("%s paced at %.0f deliveries/s: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s", name,
		f.Rate, f.PacedDeliveries, f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond))
	b.Logf("%s idle, one event at a time: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s", name,
		f.IdleDeliveries, f.Idle.P50.Round(time.Millisecond), f.Idle.P99.Round(time.Millisecond), f.Idle.Max.Round(time.Millisecond))
}

// BenchmarkTopology_Isolation is the A/B scenario: account B (healthy, one
// webhook) sends TOPOLOGY_B_EVENTS (50) alone; then account A sends
// TOPOLOGY_A_EVENTS (300) to a receiver that hangs, and B sends its events
// again while A's attempts hang. It reports B's ingest-to-arrival p99 alone
// and beside A, and their difference (the target: within 500 ms).
// Variants: TOPOLOGY_A_WEBHOOKS (1) spreads A's events over that many hung
// webhooks, each for a job of its own; TOPOLOGY_A_ANSWERS (0) has A's
// receiver answer its first requests at once before it hangs, so its
// webhooks start out in shared rounds. Delivery settings are the production
// defaults (10s timeout).
func BenchmarkTopology_Isolation(b *testing.B) {
	d := newDeployment(b, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	aEvents, bEvents := envInt("TOPOLOGY_A_EVENTS", 300), envInt("TOPOLOGY_B_EVENTS", 50)
	aWebhooks, aAnswers := envInt("TOPOLOGY_A_WEBHOOKS", 1), envInt("TOPOLOGY_A_ANSWERS", 0)

	hung := hungReceiverAfter(b, aAnswers)
	aAccount, aAPI := d.newAccount(ctx)
	aJobs := make([]int64, aWebhooks)
	for i := range aJobs {
		aJobs[i] = int64(5000 + i)
		var err error
		if aWebhooks == 1 {
			_, _, err = aAPI.CreateWebhook(ctx, aAccount, "hangs", hung)
		} else {
			_, _, err = aAPI.CreateWebhookForJob(ctx, aAccount, fmt.Sprintf("hangs %d", i), hung, aJobs[i])
		}
		if err != nil {
			b.Fatal(err)
		}
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
	aTraffic := make([]topology.Event, aEvents)
	for i := range aTraffic {
		aTraffic[i] = topology.Event{AccountID: aAccount, JobID: aJobs[i%len(aJobs)]}
		if aWebhooks == 1 {
			aTraffic[i].JobID = 42 // the job SendEvents uses
		}
	}
	if err := aAPI.Send(ctx, sink, fmt.Sprintf("a-%d", time.Now().UnixNano()), aTraffic, 32, 0); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // A's first attempts are in flight and hanging
	beside := bPhase("b-beside-a")
	b.StopTimer()
	b.ReportMetric(float64(alone.P99.Milliseconds()), "p99-ms-B-alone")
	b.ReportMetric(float64(beside.P99.Milliseconds()), "p99-ms-B-beside-A")
	b.ReportMetric(float64((beside.P99 - alone.P99).Milliseconds()), "p99-ms-difference")
	b.Logf("B alone: p50 %s p99 %s; B beside A's %d hanging events over %d webhooks (%d answered first): p50 %s p99 %s",
		alone.P50.Round(time.Millisecond), alone.P99.Round(time.Millisecond), aEvents, aWebhooks, aAnswers,
		beside.P50.Round(time.Millisecond), beside.P99.Round(time.Millisecond))
}

// hungReceiverAfter is an endpoint that answers its first answers requests
// at once and then never answers (until the test ends).
func hungReceiverAfter(tb testing.TB, answers int) string {
	tb.Helper()
	done := make(chan struct{})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) <= int64(answers) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
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
