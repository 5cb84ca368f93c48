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
// per delivery, a paced phase (TOPOLOGY_RATE deliveries/s, default 150; 0
// skips it) and an idle phase (TOPOLOGY_IDLE_EVENTS, default 100; 0 skips
// it) for ingest-to-arrival latency. Run with -benchtime=1x;
// TOPOLOGY_EVENTS and TOPOLOGY_WEBHOOKS size the burst
// (topology.DefaultSize when unset). CPU per delivery counts every process
// of the deployment, the local PostgreSQL included (Temporal's stores and
// the app database; other clients of it count too).
//
// TOPOLOGY_BATCH > 1 sends that many events a request, to the batch
// endpoint, rather than one a request (the paced phase's rate stays in
// deliveries/s).
//
// TOPOLOGY_RECEIVER (see benchReceivers) runs each shape against receivers
// that answer slowly or refuse, one after the other on the shape's
// deployment, each with accounts and webhooks of its own.
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
		Rate: float64(envCount("TOPOLOGY_RATE", 150)), Idle: envCount("TOPOLOGY_IDLE_EVENTS", 100),
	}
	receivers := benchReceivers(b)
	for _, shape := range shapes {
		b.Run("shape="+string(shape), func(b *testing.B) { benchmarkShape(b, shape, size, receivers) })
	}
}

// receiverRuns are the receivers a shape is measured against.
type receiverRuns struct {
	shapes []topology.ReceiverShape // none: the deployment's own instant receiver
	drain  time.Duration            // the bound on each burst's wait (Workload.Drain)
}

// benchReceivers reads TOPOLOGY_RECEIVER: instant, delay, knee, 429 or
// several separated by commas, with TOPOLOGY_RECEIVER_DELAY (200ms: the
// delay's, and how long the 429 receiver holds a request),
// TOPOLOGY_RECEIVER_KNEE (20ms per request in flight),
// TOPOLOGY_RECEIVER_LIMIT (8 in flight before 429) and TOPOLOGY_DRAIN (5m:
// how long after a burst's last event its deliveries are waited for).
func benchReceivers(b *testing.B) receiverRuns {
	list := os.Getenv("TOPOLOGY_RECEIVER")
	if list == "" {
		return receiverRuns{}
	}
	o := topology.ReceiverOptions{
		Delay: envDuration(b, "TOPOLOGY_RECEIVER_DELAY", topology.DefaultReceiverDelay),
		Step:  envDuration(b, "TOPOLOGY_RECEIVER_KNEE", topology.DefaultKneeStep),
		Limit: envInt("TOPOLOGY_RECEIVER_LIMIT", 0),
	}
	shapes, err := topology.ParseReceiverShapes(list, o)
	if err != nil {
		b.Fatalf("TOPOLOGY_RECEIVER: %v", err)
	}
	return receiverRuns{shapes: shapes, drain: envDuration(b, "TOPOLOGY_DRAIN", 5*time.Minute)}
}

func benchmarkShape(b *testing.B, shape topology.Shape, size topology.Size, receivers receiverRuns) {
	plan, err := topology.NewPlan(shape, size)
	if err != nil {
		b.Fatal(err)
	}
	if len(receivers.shapes) == 0 {
		d := newDeployment(b, benchWorkers(), 0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		measurePlan(b, ctx, d, plan, d.receiver, 0)
		return
	}
	// How long a refused or timed-out delivery waits is part of what these
	// receivers measure: the production retry schedule, not the tests'.
	d := newDeploymentRetrying(b, benchWorkers(), 0, nil, nil)
	for _, rs := range receivers.shapes {
		b.Run("receiver="+rs.Name(), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+receivers.drain)
			defer cancel()
			recv, err := topology.StartShapedReceiver(ctx, rs)
			if err != nil {
				b.Fatal(err)
			}
			measurePlan(b, ctx, d, plan, recv, receivers.drain)
		})
	}
}

// measurePlan provisions plan at recv and measures each of its parts.
func measurePlan(b *testing.B, ctx context.Context, d *deployment, plan topology.Plan, recv *topology.Receiver, drain time.Duration) {
	parts := d.provision(b, ctx, plan, recv)
	figures := make([]topology.Figures, len(parts))
	api := d.API
	api.Batch = envInt("TOPOLOGY_BATCH", 1) // events a request; more than 1: the batch endpoint
	for i, part := range parts {
		measure := func(b *testing.B) {
			w := topology.Workload{API: api, Receiver: recv, Traffic: part.Traffic, Concurrency: 32, CPU: d.cpuTimes, Switches: d.switches, AtRest: 2 * time.Second, Drain: drain,
				Statements: func(ctx context.Context) (topology.Statements, error) { return topology.ReadStatements(ctx, d.db.Pool) },
				Tables:     func(ctx context.Context) (topology.Tables, error) { return topology.ReadTables(ctx, d.db.Pool) },
				Temporal: func(ctx context.Context) (topology.TemporalRequests, error) {
					return topology.ReadTemporalRequests(ctx, d.adminAddrs())
				}}
			b.ResetTimer()
			f, err := w.Run(ctx)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range f.Metrics() {
				b.ReportMetric(m.Value, m.Unit)
			}
			logFigures(b, plan.Shape, part.Name, f)
			figures[i] = f
		}
		if part.Name == "" {
			measure(b)
		} else {
			b.Run(part.Name, measure)
		}
	}
	if plan.Shape == topology.BigAccount && len(figures) == 2 && figures[0].CPUMsPerDelivery > 0 {
		b.Logf("bigaccount: CPU per delivery %s / %s = %.2f", parts[1].Name, parts[0].Name,
			figures[1].CPUMsPerDelivery/figures[0].CPUMsPerDelivery)
	}
}

// provision makes plan's accounts and webhooks in the deployment's
// database, pointing at recv.
func (d *deployment) provision(tb testing.TB, ctx context.Context, plan topology.Plan, recv *topology.Receiver) []topology.Part {
	tb.Helper()
	p, err := topology.NewProvisioner(d.db.Pool, d.secretKeys)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	parts, err := p.Provision(ctx, plan, recv)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%s: %d accounts and %d webhooks made in %s", plan.Shape, len(plan.Accounts), len(plan.Webhooks), time.Since(start).Round(time.Millisecond))
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
	if f.Drained {
		b.Logf("%s burst, receiver's view: %s", name, f.LoadSummary())
	}
	switch {
	case f.StatementsErr != nil:
		b.Logf("%s burst: no statement figures: %v", name, f.StatementsErr)
	case len(f.Statements) > 0:
		b.Logf("%s burst, database statements per delivery (pg_stat_statements):\n%s", name, topology.StatementTable(f.Statements))
	}
	if len(f.Tables) > 0 {
		b.Logf("%s burst, rows written per delivery (pg_stat_user_tables; index writes: one per index of a row inserted or updated without HOT):\n%s",
			name, topology.TableTable(f.Tables))
		b.Logf("%s burst, bytes on disk per delivery by relation (tables that grew by 50 B or more; a partition's index under its parent's name):\n%s",
			name, topology.RelationTable(f.Tables, 50))
	}
	if len(f.Temporal) > 0 {
		b.Logf("%s burst, requests of Temporal per delivery (the SDK's temporal_request and temporal_long_request, API and workers):\n%s",
			name, topology.TemporalRequestTable(f.Temporal))
	}
	if f.PacedDeliveries > 0 {
		b.Logf("%s paced at %.0f deliveries/s: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s; the API answered in p50 %s p99 %s", name,
			f.Rate, f.PacedDeliveries, f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond),
			f.Paced.AnswerP50.Round(100*time.Microsecond), f.Paced.AnswerP99.Round(100*time.Microsecond))
		b.Logf("%s paced, CPU per delivery %.3f ms: %s", name, f.PacedCPUMsPerDelivery(), f.PacedCPUSplit())
		if sw := f.PacedSwitchesSplit(); sw != "" {
			b.Logf("%s paced, context switches per delivery: %s", name, sw)
		}
		if len(f.PacedTemporal) > 0 {
			b.Logf("%s paced, requests of Temporal per delivery:\n%s", name, topology.TemporalRequestTable(f.PacedTemporal))
		}
		if len(f.PacedStatements) > 0 {
			b.Logf("%s paced, database statements per delivery:\n%s", name, topology.StatementTable(f.PacedStatements))
		}
	}
	if f.IdleDeliveries > 0 {
		b.Logf("%s idle, one event at a time: %d deliveries, ingest-to-arrival p50 %s p99 %s max %s", name,
			f.IdleDeliveries, f.Idle.P50.Round(time.Millisecond), f.Idle.P99.Round(time.Millisecond), f.Idle.Max.Round(time.Millisecond))
	}
}

// BenchmarkTopology_Isolation is the A/B scenario: account B (healthy, one
// webhook) sends TOPOLOGY_B_EVENTS (50) alone; then account A sends
// TOPOLOGY_A_EVENTS (300) to a receiver that hangs, and B sends its events
// again while A's attempts hang. It reports B's ingest-to-arrival p99 alone
// and beside A, and their difference (the target: within 500 ms).
// Variants: TOPOLOGY_A_WEBHOOKS (1) spreads A's events over that many hung
// webhooks, each for a job of its own; TOPOLOGY_A_ANSWERS (0) has A's
// receiver answer its first requests at once before it hangs, so its
// webhooks start out in shared rounds; TOPOLOGY_B_AFTER (1s) is how long
// after A's events B sends. Delivery settings are the production defaults
// (10s timeout).
func BenchmarkTopology_Isolation(b *testing.B) {
	d := newDeployment(b, benchWorkers(), 1)
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
	// A's first attempts are in flight and hanging; TOPOLOGY_B_AFTER=11s
	// measures B as A's attempts time out and its lanes start instead.
	time.Sleep(envDuration(b, "TOPOLOGY_B_AFTER", time.Second))
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

// benchWorkers is how many worker processes the benchmarks' deployments
// run: TOPOLOGY_WORKERS, 2 (production's shape) when unset.
func benchWorkers() int { return envInt("TOPOLOGY_WORKERS", 2) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envCount is envInt where 0 is a value (none), not the default.
func envCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// adminAddrs are the API's and the workers' ADMIN_ADDR.
func (d *deployment) adminAddrs() []string {
	addrs := []string{d.api.Admin}
	for _, w := range d.workers {
		addrs = append(addrs, w.Admin)
	}
	return addrs
}

// cpuTimes is the CPU time used so far by each process of the deployment.
func (d *deployment) cpuTimes() map[string]time.Duration {
	return perProcess(d, topology.CPUTime, topology.PostgresCPUTime)
}

// switches is the context switches made so far by each process of the
// deployment, cpuTimes' processes.
func (d *deployment) switches() map[string]int64 {
	return perProcess(d, topology.ContextSwitches, topology.PostgresContextSwitches)
}

// perProcess reads each process of the deployment: the Temporal server,
// the API, each worker (of), and the PostgreSQL server with Temporal's
// persistence and visibility and the app database (postgres).
func perProcess[T any](d *deployment, of func(pid int) T, postgres func(postmaster int) T) map[string]T {
	m := map[string]T{
		"temporal": of(d.cluster.Server.PID()),
		"api":      of(d.api.PID()),
		"postgres": postgres(topology.Postmaster(context.Background(), d.db.Pool)),
	}
	for _, w := range d.workers {
		m[w.Name] = of(w.PID())
	}
	return m
}
