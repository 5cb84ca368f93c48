package topology_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// chaosSettings are the API's and workers' settings under chaos: a short
// timeout and quick retries, so a delivery spends its six attempts within
// a minute (1+2+4+8+16 s of waits), well inside a run.
var chaosSettings = []string{
	"DELIVERY_TIMEOUT=" + chaosTimeout.String(),
	"DELIVERY_RETRY_INITIAL_INTERVAL=1s",
	"DELIVERY_RETRY_BACKOFF_COEFFICIENT=2",
	"DELIVERY_RETRY_MAX_INTERVAL=16s",
	"DELIVERY_RETRY_AFTER_MAX=10s",
}

const chaosTimeout = 2 * time.Second

// chaosRefuseOneIn: the receiver refuses about one (event, webhook) in 40
// for good (500 to every attempt), so failed deliveries are made, and
// checked, under every fault.
const chaosRefuseOneIn = 40

// chaosWebhooks lays out the webhooks of the three accounts: an account
// index and the jobs it is for (none: every job).
var chaosWebhooks = []struct {
	account int
	jobs    []int64
}{
	{0, nil}, {0, nil}, {0, []int64{7}},
	{1, nil}, {1, nil},
	{2, nil}, {2, []int64{42}},
}

// TestTopology_Chaos is the delivery audit under faults (scripts/topology
// chaos): the production topology takes a steady stream of events for
// TOPOLOGY_CHAOS_DURATION while workers, the API and the Temporal server
// are SIGKILLed and restarted, the app database refuses connections (once
// for TOPOLOGY_CHAOS_DB_OUTAGE on end), receivers fail, hang, throttle,
// dawdle and answer hostile bytes (HostileAnswers), and webhooks are deactivated and have their secrets rotated, on
// a schedule drawn from TOPOLOGY_CHAOS_SEED. Then it drains and checks
// every accepted event against what the receivers got and what PostgreSQL
// recorded, and no workflow history outgrew 10,000 events.
func TestTopology_Chaos(t *testing.T) {
	if os.Getenv("TOPOLOGY_CHAOS") != "1" {
		t.Skip("the chaos audit runs for minutes: TOPOLOGY_CHAOS=1, or scripts/topology chaos")
	}
	duration := envDuration(t, "TOPOLOGY_CHAOS_DURATION", 30*time.Minute)
	outage := time.Minute
	if duration >= 15*time.Minute {
		outage = 4 * time.Minute
	}
	outage = envDuration(t, "TOPOLOGY_CHAOS_DB_OUTAGE", outage)
	drain := envDuration(t, "TOPOLOGY_CHAOS_DRAIN", 8*time.Minute)
	seed := uint64(envInt("TOPOLOGY_CHAOS_SEED", 1))
	rate, err := strconv.ParseFloat(envString("TOPOLOGY_CHAOS_RATE", "5"), 64)
	if err != nil || rate <= 0 {
		t.Fatalf("TOPOLOGY_CHAOS_RATE: want events a second, got %q", os.Getenv("TOPOLOGY_CHAOS_RATE"))
	}
	started := time.Now()

	d := newDeploymentEnv(t, 2, 0, chaosSettings)
	t.Cleanup(func() { dropPersistently(t, d.db.Name) })
	c := setUpChaos(t, d)
	plan := topology.NewFaultPlan(seed, duration, outage)

	sender := &topology.SteadySender{API: d.API, Rate: rate, Prefix: "chaos-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	for i := range 6 {
		sender.Targets = append(sender.Targets, topology.SendTarget{AccountID: c.accounts[i%3], JobID: []int64{42, 7}[i/3]})
	}
	stopSending := make(chan struct{})
	sendCtx, cancelSend := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancelSend()
	sent := make(chan struct{})
	go func() { sender.Run(sendCtx, stopSending, 8); close(sent) }()

	chaosCtx, endChaos := context.WithTimeout(context.Background(), duration)
	defer endChaos()
	var tracks sync.WaitGroup
	for _, steps := range [][]topology.FaultStep{plan.Infra, plan.Operations, plan.Receivers} {
		tracks.Add(1)
		go c.runTrack(chaosCtx, steps, &tracks)
	}
	<-chaosCtx.Done()
	close(stopSending)
	tracks.Wait()
	<-sent
	chaosEnded := time.Now()
	t.Logf("chaos over after %s: %d events accepted, %d requests sent again, %d events never accepted",
		chaosEnded.Sub(started).Round(time.Second), len(sender.Accepted()), sender.Retries(), sender.Refused())

	c.mu.Lock()
	windows := append([]topology.FaultWindow(nil), c.windows...)
	c.mu.Unlock()
	audit := topology.Audit{Events: sender.Accepted(), MaxAttempts: 6, MaxDuplicateRatio: 0.001, Timeout: chaosTimeout, Faults: windows}
	for _, h := range c.hooks {
		audit.Webhooks = append(audit.Webhooks, *h)
	}
	expected := expectedDeliveries(audit)
	refused := refusedDeliveries(audit, c.recv)
	ctx, cancel := context.WithTimeout(context.Background(), drain+2*time.Minute)
	defer cancel()
	drained, drainErr := c.drain(ctx, expected, drain)
	if drainErr != nil {
		t.Errorf("drain: %v", drainErr)
	}
	if audit.Records, err = readRecords(ctx, d.db.Pool); err != nil {
		t.Fatalf("read delivery records: %v", err)
	}
	audit.Arrivals = c.recv.Arrivals()
	checks := audit.Check()
	checks = append(checks, c.checkHistories(ctx))

	c.mu.Lock()
	var faults []topology.FaultCount
	for _, k := range topology.FaultKinds {
		faults = append(faults, topology.FaultCount{Kind: string(k), Count: c.injected[k], Note: summarize(c.notes[k])})
	}
	failures, startRetries := c.failures, c.startRetries
	c.mu.Unlock()
	report := fmt.Sprintf("Chaos audit, %s, seed %d, %s of faults (database outage %s), %.0f events/s over %d accounts and %d webhooks; %d CPUs\n"+
		"%d events accepted (%d requests sent again, %d never accepted), %d deliveries expected (%d refused for good by their receiver), %d arrivals; drained in %s\n\n%s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), seed, duration, outage, rate, len(c.accounts), len(c.hooks), runtime.NumCPU(),
		len(audit.Events), sender.Retries(), sender.Refused(), expected, refused, len(audit.Arrivals), drained.Round(time.Second),
		topology.FormatReport(faults, checks))
	if len(startRetries) > 0 {
		report += fmt.Sprintf("\nRestarts that exited before they were ready and were started again: %d\n", len(startRetries))
		for _, r := range startRetries {
			report += "  " + r + "\n"
		}
	}
	report += "\nProcess and database faults:\n"
	for _, w := range windows {
		report += fmt.Sprintf("  %s .. %s  %s\n", w.From.Format("15:04:05.000"), w.To.Format("15:04:05.000"), w.Kind)
	}
	fmt.Println(report)
	if dir := os.Getenv("TOPOLOGY_CHAOS_LOGS"); dir != "" {
		keepLogs(t, dir, d)
	}
	if path := os.Getenv("TOPOLOGY_CHAOS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
	for _, f := range failures {
		t.Errorf("fault injection: %s", f)
	}
	for _, k := range topology.FaultKinds {
		if c.injected[k] == 0 {
			t.Errorf("%s was never injected: run longer", k)
		}
	}
	for _, ch := range checks {
		if !ch.Passed() {
			t.Errorf("check %q failed %d times", ch.Name, ch.Failures)
		}
	}
}

// chaosSetup is the accounts and webhooks of the chaos run.
type chaosSetup struct {
	*chaosRun
	accounts []int64
}

func setUpChaos(t *testing.T, d *deployment) chaosSetup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, rcancel := context.WithCancel(context.Background())
	t.Cleanup(rcancel)
	recv, err := topology.StartChaosReceiver(rctx, chaosTimeout)
	if err != nil {
		t.Fatal(err)
	}
	recv.RefuseOneIn = chaosRefuseOneIn
	c := chaosSetup{chaosRun: &chaosRun{t: t, d: d, recv: recv, apis: map[int64]topology.API{},
		injected: map[topology.FaultKind]int{}, notes: map[topology.FaultKind][]string{}}}
	c.accounts = []int64{d.account}
	c.apis[d.account] = d.API
	for range 2 {
		id, api := d.newAccount(ctx)
		c.accounts = append(c.accounts, id)
		c.apis[id] = api
	}
	for i, w := range chaosWebhooks {
		acct := c.accounts[w.account]
		id, secret, err := c.apis[acct].CreateWebhookForJobs(ctx, acct, fmt.Sprintf("chaos %d", i+1), recv.URLFor(i+1), w.jobs)
		if err != nil {
			t.Fatal(err)
		}
		c.hooks = append(c.hooks, &topology.AuditWebhook{ID: id, AccountID: acct, JobIDs: w.jobs,
			Secrets: []topology.SecretSpan{{Secret: secret}}})
	}
	return c
}

// expectedDeliveries counts the (event, matching webhook) pairs.
func expectedDeliveries(a topology.Audit) int {
	n := 0
	for _, e := range a.Events {
		for _, h := range a.Webhooks {
			if h.AccountID == e.AccountID && (len(h.JobIDs) == 0 || h.JobIDs[0] == e.JobID) {
				n++
			}
		}
	}
	return n
}

// refusedDeliveries counts the expected deliveries the receiver refuses
// for good: each ends failed after six attempts unless its webhook was
// inactive.
func refusedDeliveries(a topology.Audit, recv *topology.ChaosReceiver) int {
	n := 0
	for _, e := range a.Events {
		for _, h := range a.Webhooks {
			if h.AccountID == e.AccountID && (len(h.JobIDs) == 0 || h.JobIDs[0] == e.JobID) && recv.Refuses(h.ID, e.ID) {
				n++
			}
		}
	}
	return n
}

func summarize(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	if len(notes) > 4 {
		return fmt.Sprintf("%s; ... (%d)", joinNotes(notes[:3]), len(notes))
	}
	return joinNotes(notes)
}

func joinNotes(notes []string) string {
	s := notes[0]
	for _, n := range notes[1:] {
		s += "; " + n
	}
	return s
}

// keepLogs copies the processes' logs (API, workers, Temporal server) to
// dir, for reading after the run.
func keepLogs(t *testing.T, dir string, d *deployment) {
	logs, _ := filepath.Glob(filepath.Join(d.dir, "*.log"))
	logs = append(logs, filepath.Join(d.cluster.Server.Dir, "temporal-server.log"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("keep logs: %v", err)
		return
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(l)), b, 0o644)
		}
		if err != nil {
			t.Errorf("keep logs: %v", err)
		}
	}
}

// dropPersistently drops the app database before testenv's cleanup does,
// trying again for a while: at the end of a run the shared server may be
// out of connection slots for a moment, and a database left behind would
// stay until the six-hour sweep.
func dropPersistently(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		if err = topology.DropDatabases(ctx, testenv.AdminDatabaseURL(), name); err == nil {
			return
		}
		time.Sleep(2 * time.Second)
	}
	t.Errorf("drop %s: %v", name, err)
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envDuration(t testing.TB, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s: want a duration like 3m, got %q", name, v)
	}
	return d
}
