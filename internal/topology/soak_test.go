package topology_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
	"github.com/jobhooks/jobhooks/worker"
)

// soakOptions are a soak's settings (TOPOLOGY_SOAK_*).
type soakOptions struct {
	duration, warmUp, window, interval, retention time.Duration
	temporalRetention                             time.Duration // the namespace's: how long closed runs stay
	rate                                          float64       // deliveries (events, one webhook each) a second
	webhooks                                      int
	failing                                       float64 // share of webhooks whose receiver answers 500
}

func soakOptionsFromEnv(t *testing.T) soakOptions {
	t.Helper()
	o := soakOptions{
		duration:  envDuration(t, "TOPOLOGY_SOAK_DURATION", time.Hour),
		window:    envDuration(t, "TOPOLOGY_SOAK_WINDOW", 10*time.Minute),
		interval:  envDuration(t, "TOPOLOGY_SOAK_INTERVAL", time.Minute),
		retention: envDuration(t, "TOPOLOGY_SOAK_RETENTION", 10*time.Minute),
		webhooks:  envInt("TOPOLOGY_SOAK_WEBHOOKS", 1000),
	}
	// The server keeps a local namespace's closed runs for an hour at least.
	o.temporalRetention = envDuration(t, "TOPOLOGY_SOAK_TEMPORAL_RETENTION", time.Hour)
	// The database fills for a retention and a purge interval before the
	// first records go; five more minutes let autovacuum reuse their space.
	o.warmUp = envDuration(t, "TOPOLOGY_SOAK_WARMUP", o.retention+5*time.Minute)
	var err error
	if o.rate, err = strconv.ParseFloat(envString("TOPOLOGY_SOAK_RATE", "300"), 64); err != nil || o.rate <= 0 {
		t.Fatalf("TOPOLOGY_SOAK_RATE: want deliveries a second, got %q", os.Getenv("TOPOLOGY_SOAK_RATE"))
	}
	if o.failing, err = topology.ParseShare(envString("TOPOLOGY_SOAK_FAILING", "5%")); err != nil {
		t.Fatalf("TOPOLOGY_SOAK_FAILING: %v", err)
	}
	return o
}

// soakHook is where a target's events go.
type soakHook struct {
	id      string
	failing bool
}

// TestTopology_Soak is the soak (scripts/topology soak): the production
// topology takes TOPOLOGY_SOAK_RATE deliveries a second (300), one event
// to one webhook each, in turn over TOPOLOGY_SOAK_WEBHOOKS webhooks
// (1,000), TOPOLOGY_SOAK_FAILING of which (5 %) answer 500 to every
// attempt, for TOPOLOGY_SOAK_DURATION (1h), with DELIVERY_RETENTION at
// TOPOLOGY_SOAK_RETENTION (10m) and the topology's quick retries, so
// failing deliveries end failed within a minute and the retention purge
// keeps the database at a retention's worth of records. Every
// TOPOLOGY_SOAK_INTERVAL (1m) it samples the ingest-to-arrival latency,
// the processes' memory and the databases' sizes; at the end it judges
// each metric: flat when its figure over the last TOPOLOGY_SOAK_WINDOW
// (10m) is within 10 % of its figure over the first window after
// TOPOLOGY_SOAK_WARMUP (the retention plus 5m). It fails when a gated
// metric is not flat, or when the healthy receivers' deliveries did not
// all arrive exactly once, correctly signed.
func TestTopology_Soak(t *testing.T) {
	if os.Getenv("TOPOLOGY_SOAK") != "1" {
		t.Skip("the soak runs for an hour: TOPOLOGY_SOAK=1, or scripts/topology soak")
	}
	o := soakOptionsFromEnv(t)
	windows, err := topology.NewSoakWindows(o.duration, o.warmUp, o.window)
	if err != nil {
		t.Fatal(err)
	}
	if settled := o.retention + worker.RetentionInterval(o.retention) + time.Minute; o.warmUp < settled {
		t.Logf("warning: the warm-up (%s) ends before the first records are purged (about %s): the database still grows in the first window", o.warmUp, settled)
	}
	plan, failingHooks, err := topology.SoakPlan(o.webhooks, o.failing)
	if err != nil {
		t.Fatal(err)
	}

	d := newDeploymentEnv(t, 2, 0, []string{"DELIVERY_RETENTION=" + o.retention.String()})
	t.Cleanup(func() { dropPersistently(t, d.db.Name) })
	if err := topology.SetNamespaceRetention(context.Background(), d.cluster.Server.Address, d.cluster.Namespace, o.temporalRetention); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	t.Cleanup(rcancel)
	healthy, err := topology.StartReceiver(rctx)
	if err != nil {
		t.Fatal(err)
	}
	failing, err := topology.StartShapedReceiver(rctx, topology.ReceiverShape{Kind: topology.Failing})
	if err != nil {
		t.Fatal(err)
	}
	var latencies topology.LatencyWindow
	healthy.ObserveLatencies(&latencies)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := topology.NewProvisioner(d.db.Pool, d.secretKeys)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := p.ProvisionAt(ctx, plan, func(i int) *topology.Receiver {
		if failingHooks[i] {
			return failing
		}
		return healthy
	})
	if err != nil {
		t.Fatal(err)
	}
	serverNote := ""
	if on, err := topology.Autovacuum(ctx, d.db.Pool); err != nil || !on {
		serverNote = "\nWARNING: the PostgreSQL server runs without autovacuum (or could not say): deleted rows' space is never reused, so the app database grows with every delivery whatever retention deletes and its verdict says nothing of the service; run on a server with autovacuum: TEST_DATABASE_URL=$(scripts/bench-postgres) scripts/topology soak\n"
		t.Log(serverNote)
	}
	hooks := map[topology.SendTarget]soakHook{}
	var targets []topology.SendTarget
	for i, e := range parts[0].Traffic.Paced {
		target := topology.SendTarget{AccountID: e.AccountID, JobID: e.JobID}
		targets = append(targets, target)
		hooks[target] = soakHook{id: e.Webhooks[0], failing: failingHooks[i]}
	}

	var sent atomic.Int64
	sender := &topology.SteadySender{API: d.API, Targets: targets, Rate: o.rate, Prefix: "soak-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		OnAccept: func(e topology.AcceptedEvent) {
			sent.Add(1)
			h := hooks[topology.SendTarget{AccountID: e.AccountID, JobID: e.JobID}]
			if !h.failing {
				healthy.Accepted(e.ID, e.At)
				healthy.Expect(e.ID, []string{h.id})
			}
		}}
	loadAtStart := loadAverage()
	stop := make(chan struct{})
	sendCtx, cancelSend := context.WithTimeout(context.Background(), o.duration+5*time.Minute)
	defer cancelSend()
	senderDone := make(chan struct{})
	start := time.Now()
	go func() { sender.Run(sendCtx, stop, 64); close(senderDone) }()

	t.Logf("soak: %s at %.0f deliveries/s over %d webhooks (%d answer 500), retention %s (purge every %s), Temporal's %s, warm-up %s, windows %s-%s and %s-%s",
		o.duration, o.rate, o.webhooks, countTrue(failingHooks), o.retention, worker.RetentionInterval(o.retention), o.temporalRetention, o.warmUp,
		windows.FirstFrom, windows.FirstTo, windows.LastFrom, windows.LastTo)
	var (
		samples     []topology.SoakSample
		firstTables []topology.TableSize
		prevAt      time.Duration
		prevSent    int64
		prevFailed  int
	)
	for k := 1; ; k++ {
		at := time.Duration(k) * o.interval
		if at > o.duration {
			break
		}
		time.Sleep(time.Until(start.Add(at)))
		s := d.soakSample(time.Since(start))
		s.Interval, prevAt = s.At-prevAt, s.At
		s.Latencies = latencies.Take()
		s.Delivered = len(s.Latencies)
		n := sent.Load()
		s.Sent, prevSent = int(n-prevSent), n
		f := failing.Load().Failed
		s.FailedRequests, prevFailed = f-prevFailed, f
		samples = append(samples, s)
		if s.At-s.Interval/2 <= windows.FirstTo {
			firstTables = s.Tables
		}
		var made, dropped int
		if len(samples) > 1 {
			made, dropped = topology.PartitionChanges(samples[len(samples)-2].Partitions, s.Partitions)
		}
		t.Logf("%s: sent %.0f/s, delivered %.0f/s, 500s %.0f/s, p50 %s p99 %s, RSS %s, app DB %.1f MB, Temporal DB %.1f MB, records %v, oldest pending %s, partitions +%d/-%d",
			s.At.Round(time.Second), float64(s.Sent)/s.Interval.Seconds(), float64(s.Delivered)/s.Interval.Seconds(),
			float64(s.FailedRequests)/s.Interval.Seconds(), s.P50().Round(time.Millisecond), s.P99().Round(time.Millisecond),
			rssSummary(s.RSS), float64(s.AppDB)/(1<<20), float64(s.TemporalDB)/(1<<20), s.Records, s.OldestPending.Round(time.Second), made, dropped)
	}
	close(stop)
	<-senderDone
	loadAtEnd := loadAverage()

	// What was accepted must arrive at the healthy receiver, once each.
	wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer wcancel()
	_ = healthy.WaitExpected(wctx, time.Minute)
	arrived, expected := healthy.Progress()
	arrivalCheck := healthy.Check()

	verdicts := topology.JudgeSoak(samples, windows, topology.SoakTolerance)
	var lastTables []topology.TableSize
	if len(samples) > 0 {
		lastTables = samples[len(samples)-1].Tables
	}
	report := fmt.Sprintf("Soak, %s, %s at %.0f deliveries/s over %d webhooks (%d answer 500), DELIVERY_RETENTION %s (purge every %s), Temporal namespace retention %s, warm-up %s, windows of %s%s; %d CPUs, load average %s at the start and %s at the end\n"+
		"%d events accepted (%d requests sent again, %d never accepted); %d of %d healthy deliveries arrived by the end of the drain; 500s answered: %d\n%s\n%s\n%s\n%s",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), o.duration, o.rate, o.webhooks, countTrue(failingHooks), o.retention,
		worker.RetentionInterval(o.retention), o.temporalRetention, o.warmUp, windows.FirstTo-windows.FirstFrom, shrunkNote(windows), runtime.NumCPU(),
		loadAtStart, loadAtEnd, sent.Load(), sender.Retries(), sender.Refused(), arrived, expected, failing.Load().Failed, serverNote,
		topology.SoakTable(samples), topology.VerdictTable(verdicts, windows, topology.SoakTolerance), topology.TableGrowth(firstTables, lastTables))
	if arrivalCheck != nil {
		report += fmt.Sprintf("\nArrivals at the healthy receiver: %v\n", arrivalCheck)
	} else {
		report += "\nArrivals at the healthy receiver: every accepted delivery arrived once, correctly signed, at its webhook's path\n"
	}
	fmt.Println(report)
	if path := os.Getenv("TOPOLOGY_SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
	if arrivalCheck != nil {
		t.Errorf("healthy deliveries: %v", arrivalCheck)
	}
	for _, v := range verdicts {
		if v.Gate && !v.Flat {
			t.Errorf("not flat: %s", v)
		}
	}
}

// soakSample reads the deployment's state now: each process's memory,
// the databases' sizes and the app database's records. A failed reading
// leaves its figure out of the sample (and the verdict).
func (d *deployment) soakSample(at time.Duration) topology.SoakSample {
	s := topology.SoakSample{At: at, RSS: map[string]int64{
		"api":      topology.RSS(d.api.PID()),
		"temporal": topology.RSS(d.cluster.Server.PID()),
	}}
	for _, w := range d.workers {
		s.RSS[w.Name] = topology.RSS(w.PID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if s.AppDB, err = topology.DatabaseSizes(ctx, d.db.Pool, d.db.Name); err != nil {
		d.t.Logf("sample: %v", err)
	}
	if s.TemporalDB, err = topology.DatabaseSizes(ctx, d.db.Pool, d.cluster.Databases...); err != nil {
		d.t.Logf("sample: %v", err)
	}
	if s.Tables, err = topology.LargestTables(ctx, d.db.Pool, 6); err != nil {
		d.t.Logf("sample: %v", err)
	}
	if s.Records, s.OldestPending, err = topology.DeliveryRecords(ctx, d.db.Pool); err != nil {
		d.t.Logf("sample: %v", err)
	}
	if s.Partitions, err = topology.DeliveryPartitions(ctx, d.db.Pool); err != nil {
		d.t.Logf("sample: %v", err)
	}
	// Without pg_stat_statements (a server other than scripts/bench-postgres)
	// the table shows no statement time.
	s.Statements, _ = topology.ReadStatements(ctx, d.db.Pool)
	return s
}

func rssSummary(rss map[string]int64) string {
	var parts []string
	for _, name := range []string{"api", "worker-1", "worker-2", "temporal"} {
		if v, ok := rss[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f MB", name, float64(v)/(1<<20)))
		}
	}
	return strings.Join(parts, ", ")
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func shrunkNote(w topology.SoakWindows) string {
	if w.Shrunk {
		return " (shrunk to half the run after warm-up: a short run)"
	}
	return ""
}

// loadAverage is the machine's 1-, 5- and 15-minute load averages, for the
// report (the box may be shared).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
