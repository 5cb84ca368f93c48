package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/internal/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/topology"
)

const benchUsage = `Measures delivery end to end: starts a Temporal dev server, a fresh
database, the API (webhooks serve) and a worker (webhooks worker) as separate
processes, and a loopback receiver with --subscriptions webhooks. Over HTTP
only (the subscription API and the ingestion endpoint) it sends a burst of
--events events from --concurrency senders, then paces events at --rate
deliveries/s for about ten seconds, then sends --idle events one at a time. It
prints Go benchmark lines: deliveries/s and cpu-ms/delivery (the CPU of the
API, worker and Temporal processes and of the local PostgreSQL) of the burst,
p50/p99 ingest-to-arrival latency at the rate, and p99 one event at a time on
the idle system. Worker settings come
from the environment as usual (for example WORKER_MAX_CONCURRENT_DELIVERIES);
the database server is DATABASE_URL's.`

type benchOptions struct {
	events, subs, concurrency int
	rate                      float64
	idle                      int
}

func runBench(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "bench", benchUsage)
	var o benchOptions
	fs.IntVar(&o.events, "events", 1000, "events of the burst")
	fs.IntVar(&o.subs, "subscriptions", 5, "matching webhooks per event")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent ingestion requests")
	fs.Float64Var(&o.rate, "rate", 150, "deliveries per second of the paced phase (0 skips it)")
	fs.IntVar(&o.idle, "idle", 50, "events sent one at a time on the idle system (0 skips it)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if o.events < 1 || o.subs < 1 || o.concurrency < 1 || o.rate < 0 || o.idle < 0 {
		return errors.New("bench: --events, --subscriptions and --concurrency must be at least 1, --rate and --idle not negative")
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
	w, err := d.workload(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "bench: %d events x %d webhooks, %d senders, paced phase at %.0f deliveries/s (logs in %s while it runs)\n",
		o.events, o.subs, o.concurrency, o.rate, dir)
	f, err := w.Run(ctx)
	if err != nil {
		return fmt.Errorf("bench (api log tail):\n%s\n%w", d.api.LogTail(2000), err)
	}
	fmt.Fprintf(env.stdout, "burst: %d deliveries in %s, ingest-to-arrival p50 %s p99 %s; CPU %s\n", f.Deliveries,
		f.Elapsed.Round(time.Millisecond), f.Burst.P50.Round(time.Millisecond), f.Burst.P99.Round(time.Millisecond), f.CPUSplit())
	if f.PacedDeliveries > 0 {
		fmt.Fprintf(env.stdout, "paced: %d deliveries at %.0f/s, ingest-to-arrival p50 %s p99 %s max %s\n", f.PacedDeliveries, f.Rate,
			f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond))
	}
	name := fmt.Sprintf("BenchmarkWebhooks/events=%d/subscriptions=%d/concurrency=%d/rate=%g", o.events, o.subs, o.concurrency, o.rate)
	fmt.Fprintln(env.stdout, topology.BenchmarkLine(name, f.Metrics()))
	return nil
}

// benchDeployment is the service under measurement, each part a process.
type benchDeployment struct {
	temporal    *devtemporal.Server
	api, worker *topology.Process
	dropDB      func()
	apiURL      string
	internal    string
	account     int64
	token       string
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
	vars := map[string]string{
		"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": addr(0), "INTERNAL_API_TOKEN": d.internal,
		"SECRET_ENCRYPTION_KEYS":  "bench:" + base64.StdEncoding.EncodeToString(randomBytes(32)),
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8", "LOG_LEVEL": "error",
	}
	childGetenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env.getenv(k)
	}
	// The program's own operator commands set up the database and the
	// credentials, as an operator would.
	if err := run(ctx, []string{"migrate"}, childGetenv, &strings.Builder{}, env.stderr); err != nil {
		return d, fmt.Errorf("bench database: %w", err)
	}
	d.dropDB = func() { dropBenchDatabase(dbURL) }
	if err := d.createCredentials(ctx, childGetenv, env); err != nil {
		return d, err
	}

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

// createCredentials makes the benchmark's account and an account_admin
// service token with `webhooks accounts create` and `service-tokens create`.
func (d *benchDeployment) createCredentials(ctx context.Context, getenv func(string) string, env *environment) error {
	var acct accountCreated
	if err := runJSON(ctx, getenv, env, &acct, "accounts", "create", "--name", "Bench", "--plan", "enterprise"); err != nil {
		return err
	}
	var tok serviceTokenCreated
	if err := runJSON(ctx, getenv, env, &tok, "service-tokens", "create", "--account", fmt.Sprint(acct.AccountID),
		"--name", "bench", "--permission-set", "account_admin"); err != nil {
		return err
	}
	d.account, d.token = acct.AccountID, tok.Token
	return nil
}

type accountCreated struct {
	AccountID int64 `json:"account_id"`
}

type serviceTokenCreated struct {
	Token string `json:"token"`
}

func runJSON(ctx context.Context, getenv func(string) string, env *environment, v any, args ...string) error {
	var out strings.Builder
	if err := run(ctx, args, getenv, &out, env.stderr); err != nil {
		return fmt.Errorf("webhooks %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal([]byte(out.String()), v); err != nil {
		return fmt.Errorf("webhooks %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// workload subscribes a loopback receiver --subscriptions times through the
// subscription API and returns the benchmark over it.
func (d *benchDeployment) workload(ctx context.Context, o benchOptions) (topology.Workload, error) {
	api := topology.API{BaseURL: d.apiURL, Token: d.token, InternalToken: d.internal,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency}}}
	recv, err := topology.StartReceiver(ctx)
	if err != nil {
		return topology.Workload{}, err
	}
	for i := range o.subs {
		id, secret, err := api.CreateWebhook(ctx, d.account, fmt.Sprintf("bench %d", i+1), recv.URL)
		if err != nil {
			return topology.Workload{}, err
		}
		recv.Trust(id, secret)
	}
	return topology.Workload{
		API: api, Receiver: recv, AccountID: d.account, Webhooks: o.subs,
		Events: o.events, Concurrency: o.concurrency, Rate: o.rate, Idle: o.idle,
		CPU: func() map[string]time.Duration {
			return map[string]time.Duration{
				"api":      topology.CPUTime(d.api.PID()),
				"worker":   topology.CPUTime(d.worker.PID()),
				"temporal": topology.CPUTime(d.temporal.PID()),
				// The app database (other clients of a local server count too).
				"postgres": topology.PostgresCPUTime(),
			}
		},
	}, nil
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
