package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

const benchUsage = `Measures delivery: starts a Temporal dev server, a fresh database, the API
(webhooks serve) and the worker (webhooks worker) as separate processes and a
loopback receiver; ingests --events events that each fan out to
--subscriptions webhooks; prints deliveries/s, CPU seconds per delivery of
each process, p50/p95/p99 ingest-to-arrival latency and peak RSS. Then, in
the same run, it POSTs the same number of signed payloads directly (no
Temporal) as a baseline. Worker settings come from the environment as usual
(for example WORKER_MAX_CONCURRENT_DELIVERIES).`

type benchOptions struct {
	events, subs, concurrency int
	rate                      float64
	inMemory, baseline        bool
	together                  bool
	temporalArgs              stringList
}

func runBench(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "bench", benchUsage)
	var o benchOptions
	fs.IntVar(&o.events, "events", 1000, "events to ingest")
	fs.IntVar(&o.subs, "subscriptions", 5, "matching webhooks per event")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent ingestion (and baseline) requests")
	fs.Float64Var(&o.rate, "rate", 0, "target deliveries per second (0: as fast as possible)")
	fs.BoolVar(&o.inMemory, "in-memory", false, "run the Temporal dev server without a database file")
	fs.BoolVar(&o.baseline, "baseline", true, "also measure direct signed POSTs without Temporal")
	fs.BoolVar(&o.together, "together", false, "run API and worker in one process (webhooks dev), so workflow starts are eager")
	fs.Var(&o.temporalArgs, "temporal-arg", "extra argument of `temporal server start-dev` (repeatable), e.g. --temporal-arg=--sqlite-pragma=journal_mode=wal")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if o.events < 1 || o.subs < 1 || o.concurrency < 1 || o.rate < 0 {
		return errors.New("bench: --events, --subscriptions and --concurrency must be at least 1, --rate not negative")
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
	b := &bench{env: env, o: o, dir: dir}
	defer b.cleanup()
	if err := b.setUp(ctx, base); err != nil {
		return err
	}
	return b.run(ctx)
}

type bench struct {
	env      *environment
	o        benchOptions
	dir      string
	cleanups []func()
	temporal *benchProc
	api      *benchProc
	worker   *benchProc
	apiURL   string
	token    string
	account  int64
	secrets  map[string]string // subscription id -> secret (baseline signing)
	recv     *benchReceiver
	retries  atomic.Int64 // ingestion requests retried after a 503
}

func (b *bench) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

func benchFreeAddr() (string, error) { return freeport.Addr() }

func (b *bench) setUp(ctx context.Context, base config.Config) error {
	cli, err := devtemporal.FindCLI(ctx, b.env.getenv, true, b.env.stderr)
	if err != nil {
		return err
	}
	temporalAddr, err := benchFreeAddr()
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(temporalAddr)
	targs := []string{"server", "start-dev", "--ip", host, "--port", port, "--headless", "--log-level", "error"}
	if !b.o.inMemory {
		targs = append(targs, "--db-filename", filepath.Join(b.dir, "temporal.db"))
		if len(b.o.temporalArgs) == 0 {
			targs = append(targs, devtemporal.SQLitePragmas...) // as `webhooks dev` runs it
		}
	}
	targs = append(targs, b.o.temporalArgs...)
	if b.temporal, err = startBenchProc("temporal", filepath.Join(b.dir, "temporal.log"), os.Environ(), cli, targs...); err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, b.temporal.stop)
	if err := waitTemporal(ctx, temporalAddr); err != nil {
		return err
	}

	dbURL, dropDB, err := benchDatabase(ctx, base.DatabaseURL)
	if err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, dropDB)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys := "bench:" + base64.StdEncoding.EncodeToString(key)
	b.token = secrets.NewToken("whi_")
	if err := b.createSubscriptions(ctx, dbURL, keys); err != nil {
		return err
	}

	apiAddr, _ := benchFreeAddr()
	apiAdmin, _ := benchFreeAddr()
	workerAdmin, _ := benchFreeAddr()
	b.apiURL = "http://" + apiAddr
	childEnv := append(os.Environ(), "DATABASE_URL="+dbURL, "TEMPORAL_ADDRESS="+temporalAddr,
		"SECRET_ENCRYPTION_KEYS="+keys, "INTERNAL_API_TOKEN="+b.token,
		"DESTINATION_ALLOW_CIDRS=127.0.0.0/8", "LOG_LEVEL=error")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	apiCommand := "serve"
	if b.o.together {
		apiCommand = "dev" // uses the running Temporal; API and worker share a client
		childEnv = append(childEnv, "WEBHOOKS_DATA_DIR="+filepath.Join(b.dir, "dev"))
	} else {
		if b.worker, err = startBenchProc("worker", filepath.Join(b.dir, "worker.log"), append(childEnv, "ADMIN_ADDR="+workerAdmin), self, "worker"); err != nil {
			return err
		}
		b.cleanups = append(b.cleanups, b.worker.stop)
	}
	if b.api, err = startBenchProc("api", filepath.Join(b.dir, "api.log"), append(childEnv, "ADMIN_ADDR="+apiAdmin, "HTTP_ADDR="+apiAddr), self, apiCommand); err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, b.api.stop)
	if err := waitHTTP(ctx, b.apiURL+"/readyz"); err != nil {
		return fmt.Errorf("API not ready (log %s): %w", filepath.Join(b.dir, "api.log"), err)
	}
	// Warm up: one event end to end, not measured.
	if _, err := b.phase(ctx, 1, 0); err != nil {
		return fmt.Errorf("warm-up (logs in %s): %w", b.dir, err)
	}
	return nil
}

// createSubscriptions makes the account, its webhooks and the receiver.
func (b *bench) createSubscriptions(ctx context.Context, dbURL, keys string) error {
	pool, err := db.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	acct, err := identity.NewStore(pool).CreateAccount(ctx, "Bench", webhooks.PlanEnterprise)
	if err != nil {
		return err
	}
	b.account = acct.ID
	parsed, _ := config.ParseSecretKeys(keys)
	box, err := secrets.NewBox(parsed)
	if err != nil {
		return err
	}
	if b.recv, err = startBenchReceiver(); err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, func() { _ = b.recv.srv.Close() })
	store := subscriptions.NewStore(pool, box)
	b.secrets = map[string]string{}
	for i := range b.o.subs {
		sub, secret, err := store.Create(ctx, webhooks.Subscription{
			AccountID: acct.ID, Name: fmt.Sprintf("bench %d", i), ClientURL: b.recv.url,
			EventTypes: webhooks.EventTypes, Active: true,
		})
		if err != nil {
			return err
		}
		b.secrets[sub.ID] = secret
	}
	return nil
}

func benchDatabase(ctx context.Context, baseURL string) (string, func(), error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", nil, err
	}
	name := "webhooks_bench_" + strings.ToLower(rand.Text()[:8])
	u.Path = "/" + name
	if err := db.EnsureDatabase(ctx, u.String()); err != nil {
		return "", nil, err
	}
	pool, err := db.Open(ctx, u.String())
	if err != nil {
		return "", nil, err
	}
	err = db.Migrate(ctx, pool, discardSlog())
	pool.Close()
	drop := func() {
		admin := *u
		admin.Path = "/postgres"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, admin.String()); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
	}
	return u.String(), drop, err
}

func waitTemporal(ctx context.Context, addr string) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if devtemporal.Reachable(addr) {
			c, err := client.Dial(client.Options{HostPort: addr, Logger: sdklog.NewStructuredLogger(discardSlog())})
			if err == nil {
				_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
				c.Close()
				if err == nil {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("temporal dev server at %s not healthy in 90s", addr)
}

func waitHTTP(ctx context.Context, u string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready in 60s", u)
}

// phase ingests events through the API and waits for every delivery.
func (b *bench) phase(ctx context.Context, events int, rate float64) ([]time.Duration, error) {
	expected := events * b.o.subs
	done := b.recv.expect(expected)
	runTag := strings.ToLower(rand.Text()[:6])
	hc := &http.Client{Timeout: 30 * time.Second}
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(b.o.subs) / rate)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.o.concurrency)
	start := time.Now()
	for i := range events {
		if interval > 0 {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
		}
		callerID := fmt.Sprintf("bench-%s-%d", runTag, i)
		g.Go(func() error {
			b.recv.ingested(deliveries.EventIDFor(b.account, callerID), time.Now())
			return b.ingest(gctx, hc, callerID, i)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	select {
	case <-done:
	case <-time.After(10*time.Minute + time.Duration(expected)*20*time.Millisecond):
		lat, _ := b.recv.results()
		return nil, fmt.Errorf("only %d of %d deliveries arrived", len(lat), expected)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	lat, _ := b.recv.results()
	return lat, nil
}

func (b *bench) ingest(ctx context.Context, hc *http.Client, callerID string, i int) error {
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"accountId":%d,"eventType":"job.run.completed","eventId":%q,"data":{"jobId":%d,"jobName":"Bench job","runId":%d,"environmentId":1,"environmentName":"Prod","dbtVersion":"1.9.2","projectName":"Bench","projectId":1,"runStatusMessage":"Success","runReason":"bench","runStartedAt":%q,"runFinishedAt":%q}}`,
		b.account, callerID, 1+i%50, i, now.Add(-time.Minute).Format(webhooks.RunTimeFormat), now.Format(webhooks.RunTimeFormat))
	// Like a real caller: retry a 503 with the same eventId (idempotent).
	for attempt := 1; ; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.apiURL+"/internal/v1/job-run-events", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+b.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			return nil
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < 5:
			b.retries.Add(1)
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		default:
			return fmt.Errorf("ingest: %s (attempt %d)", resp.Status, attempt)
		}
	}
}
