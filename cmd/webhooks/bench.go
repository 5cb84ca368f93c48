package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/topology"
)

const benchUsage = `Measures delivery end to end: starts a Temporal dev server, a fresh
database, the API (webhooks serve) and a worker (webhooks worker) as separate
processes, and a loopback receiver for every webhook. It makes the accounts
and webhooks of a workload --shape in the database through the service's own
stores (secrets sealed with its keys), then, over HTTP only (the ingestion
endpoint), sends a burst of --events events from --concurrency senders, paces
events at --rate deliveries/s for about ten seconds, and sends --idle events
one at a time. Every delivery must arrive exactly once, signed, at its
webhook's URL. Shapes:
  concentrated  every event to each of --subscriptions webhooks of one account (default 1000 x 5)
  spread        each event to a webhook of its own that had no event before (default 2000)
  zipf          events drawn Zipf (s = 1.1) over --subscriptions webhooks in accounts of ten
                (default 20000 events, 10000 webhooks)
  bigaccount    events to one job of an account with --subscriptions webhooks, each for its own
                job, beside the same events to an account with one webhook (default 2000, 10000)
It prints Go benchmark lines named after the shape: deliveries/s and
cpu-ms/delivery (the CPU of the API, worker and Temporal processes and of the
local PostgreSQL) of the burst, p50/p99 ingest-to-arrival latency at the rate,
and p99 one event at a time on the idle system. Worker settings come from the
environment as usual (for example WORKER_MAX_CONCURRENT_DELIVERIES); the
database server is DATABASE_URL's.`

type benchOptions struct {
	shape                     string
	events, subs, concurrency int
	rate                      float64
	idle                      int
}

func runBench(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "bench", benchUsage)
	var o benchOptions
	fs.StringVar(&o.shape, "shape", "concentrated", "workload shape: concentrated, spread, zipf or bigaccount")
	fs.IntVar(&o.events, "events", 0, "events of the burst (0: the shape's default)")
	fs.IntVar(&o.subs, "subscriptions", 0, "webhooks: per event (concentrated), in all (zipf), in the big account (bigaccount); 0: the shape's default")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent ingestion requests")
	fs.Float64Var(&o.rate, "rate", 150, "deliveries per second of the paced phase (0 skips it)")
	fs.IntVar(&o.idle, "idle", 50, "events sent one at a time on the idle system (0 skips it)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if o.events < 0 || o.subs < 0 || o.concurrency < 1 || o.rate < 0 || o.idle < 0 {
		return errors.New("bench: --concurrency must be at least 1, --events, --subscriptions, --rate and --idle not negative")
	}
	shape, err := topology.ParseShape(o.shape)
	if err != nil {
		return fmt.Errorf("bench: --shape: %w", err)
	}
	plan, err := topology.NewPlan(shape, topology.Size{Events: o.events, Webhooks: o.subs, Rate: o.rate, Idle: o.idle})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	base, err := loadConfig(env)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "webhooks-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	d, err := startBenchDeployment(ctx, env, base.DatabaseURL, dir)
	if d != nil {
		defer d.stop()
	}
	if err != nil {
		return err
	}
	recv, parts, err := d.provision(ctx, plan)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "bench %s: %d events, %d webhooks in %d accounts, %d senders, paced phase at %.0f deliveries/s (logs in %s while it runs)\n",
		shape, plan.Size.Events, len(plan.Webhooks), len(plan.Accounts), o.concurrency, o.rate, dir)
	var figures []topology.Figures
	for _, part := range parts {
		label, name := string(shape), "shape="+string(shape)
		if part.Name != "" {
			label, name = label+" "+part.Name, name+"/"+part.Name
		}
		w := d.workload(recv, part.Traffic, o.concurrency)
		f, err := w.Run(ctx)
		if err != nil {
			return fmt.Errorf("bench %s (api log tail):\n%s\n%w", label, d.api.LogTail(2000), err)
		}
		fmt.Fprintf(env.stdout, "%s burst: %d deliveries in %s, ingest-to-arrival p50 %s p99 %s; CPU %s\n", label, f.Deliveries,
			f.Elapsed.Round(time.Millisecond), f.Burst.P50.Round(time.Millisecond), f.Burst.P99.Round(time.Millisecond), f.CPUSplit())
		if f.PacedDeliveries > 0 {
			fmt.Fprintf(env.stdout, "%s paced: %d deliveries at %.0f/s, ingest-to-arrival p50 %s p99 %s max %s\n", label, f.PacedDeliveries, f.Rate,
				f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond))
		}
		name = fmt.Sprintf("BenchmarkWebhooks/%s/events=%d/subscriptions=%d/concurrency=%d/rate=%g", name, plan.Size.Events, plan.Size.Webhooks, o.concurrency, o.rate)
		fmt.Fprintln(env.stdout, topology.BenchmarkLine(name, f.Metrics()))
		figures = append(figures, f)
	}
	if shape == topology.BigAccount && figures[0].CPUMsPerDelivery > 0 {
		fmt.Fprintf(env.stdout, "bigaccount: CPU per delivery %s / %s = %.2f\n", parts[1].Name, parts[0].Name,
			figures[1].CPUMsPerDelivery/figures[0].CPUMsPerDelivery)
	}
	return nil
}

// benchDeployment is the service under measurement, each part a process.
type benchDeployment struct {
	temporal    *devtemporal.Server
	api, worker *topology.Process
	dropDB      func()
	dbURL       string
	secretKeys  string // SECRET_ENCRYPTION_KEYS of the API and worker
	apiURL      string
	internal    string
}

func startBenchDeployment(ctx context.Context, env *environment, baseDatabaseURL, dir string) (*benchDeployment, error) {
	d := &benchDeployment{}
	cli, err := devtemporal.FindCLI(ctx, env.getenv, true, env.stderr)
	if err != nil {
		return d, err
	}
	addrs, err := freeport.Ports(5)
	if err != nil {
		return d, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", addrs[i]) }
	logFile, err := os.Create(filepath.Join(dir, "temporal.log"))
	if err != nil {
		return d, err
	}
	if d.temporal, err = devtemporal.Start(ctx, devtemporal.Options{
		CLI: cli, Address: addr(0), DBFile: filepath.Join(dir, "temporal.db"), Log: logFile,
	}); err != nil {
		return d, err
	}

	dbURL, err := benchDatabaseURL(baseDatabaseURL)
	if err != nil {
		return d, err
	}
	d.internal = "whi_bench_" + rand.Text()
	d.dbURL, d.secretKeys = dbURL, "bench:"+base64.StdEncoding.EncodeToString(randomBytes(32))
	vars := map[string]string{
		"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": addr(0), "INTERNAL_API_TOKEN": d.internal,
		"SECRET_ENCRYPTION_KEYS":  d.secretKeys,
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8", "LOG_LEVEL": "error",
	}
	childGetenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env.getenv(k)
	}
	// The program's own operator command sets up the database, as an
	// operator would.
	if err := run(ctx, []string{"migrate"}, childGetenv, &strings.Builder{}, env.stderr); err != nil {
		return d, fmt.Errorf("bench database: %w", err)
	}
	d.dropDB = func() { dropBenchDatabase(dbURL) }

	self, err := os.Executable()
	if err != nil {
		return d, err
	}
	childEnv := os.Environ()
	for k, v := range vars {
		childEnv = append(childEnv, k+"="+v)
	}
	if d.worker, err = topology.StartProcess(self, "worker", dir, append(childEnv, "ADMIN_ADDR="+addr(1), "HTTP_ADDR="+addr(2)), "worker"); err != nil {
		return d, err
	}
	if d.api, err = topology.StartProcess(self, "api", dir, append(childEnv, "ADMIN_ADDR="+addr(3), "HTTP_ADDR="+addr(4)), "serve"); err != nil {
		return d, err
	}
	d.apiURL = "http://" + addr(4)
	for _, p := range []*topology.Process{d.worker, d.api} {
		if err := p.WaitReady(ctx, time.Minute); err != nil {
			return d, err
		}
	}
	return d, nil
}

// provision makes plan's accounts and webhooks in the bench database,
// each webhook pointing at its own path on a loopback receiver.
func (d *benchDeployment) provision(ctx context.Context, plan topology.Plan) (*topology.Receiver, []topology.Part, error) {
	recv, err := topology.StartReceiver(ctx)
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.New(ctx, d.dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("bench database: %w", err)
	}
	defer pool.Close()
	p, err := topology.NewProvisioner(pool, d.secretKeys)
	if err != nil {
		return nil, nil, err
	}
	parts, err := p.Provision(ctx, plan, recv)
	return recv, parts, err
}

// workload is the benchmark of traffic over the deployment's API.
func (d *benchDeployment) workload(recv *topology.Receiver, traffic topology.Traffic, concurrency int) topology.Workload {
	api := topology.API{BaseURL: d.apiURL, InternalToken: d.internal,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}}
	return topology.Workload{
		API: api, Receiver: recv, Traffic: traffic, Concurrency: concurrency,
		CPU: func() map[string]time.Duration {
			return map[string]time.Duration{
				"api":      topology.CPUTime(d.api.PID()),
				"worker":   topology.CPUTime(d.worker.PID()),
				"temporal": topology.CPUTime(d.temporal.PID()),
				// The app database (other clients of a local server count too).
				"postgres": topology.PostgresCPUTime(),
			}
		},
	}
}

func (d *benchDeployment) stop() {
	for _, p := range []*topology.Process{d.api, d.worker} {
		if p != nil {
			_ = p.Stop(20 * time.Second)
		}
	}
	if d.temporal != nil {
		_ = d.temporal.Stop()
	}
	if d.dropDB != nil {
		d.dropDB()
	}
}

// benchDatabaseURL names a fresh database on baseURL's server.
func benchDatabaseURL(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/webhooks_bench_" + strings.ToLower(rand.Text()[:8])
	return u.String(), nil
}

func dropBenchDatabase(dbURL string) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, u.String()); err == nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		_ = conn.Close(ctx)
	}
}
