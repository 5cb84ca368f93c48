package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// deployment is the service under measurement, each part a process.
type deployment struct {
	temporal    *devtemporal.Server
	api, worker *topology.Process
	dropDB      func()
	dbURL       string
	secretKeys  string // SECRET_ENCRYPTION_KEYS of the API and worker
	// postmaster is the bench database's server (its CPU is the
	// deployment's), 0 until provision finds it.
	postmaster int
	apiURL     string
	internal   string
}

// buildWebhooks builds this module's production binary into dir.
func buildWebhooks(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "webhooks")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/jobhooks/jobhooks/cmd/webhooks")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build webhooks (or pass --webhooks): %w\n%s", err, out)
	}
	return bin, nil
}

// startDeployment runs bin's API and worker against a Temporal dev server
// and a fresh database on baseDatabaseURL's server.
func startDeployment(ctx context.Context, bin string, getenv func(string) string, stderr io.Writer, baseDatabaseURL, dir string) (*deployment, error) {
	d := &deployment{}
	cli, err := devtemporal.FindCLI(ctx, getenv, true, stderr)
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

	dbURL, err := databaseURL(baseDatabaseURL)
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
	childEnv := os.Environ()
	for k, v := range vars {
		childEnv = append(childEnv, k+"="+v)
	}
	// The program's own operator command sets up the database, as an
	// operator would.
	migrate := exec.CommandContext(ctx, bin, "migrate")
	migrate.Env = childEnv
	if out, err := migrate.CombinedOutput(); err != nil {
		return d, fmt.Errorf("bench database: webhooks migrate: %w\n%s", err, out)
	}
	d.dropDB = func() { dropDatabase(dbURL) }

	if d.worker, err = topology.StartProcess(bin, "worker", dir, append(childEnv, "ADMIN_ADDR="+addr(1), "HTTP_ADDR="+addr(2)), "worker"); err != nil {
		return d, err
	}
	if d.api, err = topology.StartProcess(bin, "api", dir, append(childEnv, "ADMIN_ADDR="+addr(3), "HTTP_ADDR="+addr(4)), "serve"); err != nil {
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
// each webhook pointing at its own path on a loopback receiver of shape.
func (d *deployment) provision(ctx context.Context, plan topology.Plan, shape topology.ReceiverShape) (*topology.Receiver, []topology.Part, error) {
	recv, err := topology.StartShapedReceiver(ctx, shape)
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.New(ctx, d.dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("bench database: %w", err)
	}
	defer pool.Close()
	d.postmaster = topology.Postmaster(ctx, pool)
	p, err := topology.NewProvisioner(pool, d.secretKeys)
	if err != nil {
		return nil, nil, err
	}
	parts, err := p.Provision(ctx, plan, recv)
	return recv, parts, err
}

// workload is the benchmark of traffic over the deployment's API.
func (d *deployment) workload(recv *topology.Receiver, traffic topology.Traffic, concurrency int) topology.Workload {
	api := topology.API{BaseURL: d.apiURL, InternalToken: d.internal,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}}
	return topology.Workload{
		API: api, Receiver: recv, Traffic: traffic, Concurrency: concurrency,
		CPU: func() map[string]time.Duration {
			return map[string]time.Duration{
				"api":      topology.CPUTime(d.api.PID()),
				"worker":   topology.CPUTime(d.worker.PID()),
				"temporal": topology.CPUTime(d.temporal.PID()),
				// The app database's server (its other clients count too).
				"postgres": topology.PostgresCPUTime(d.postmaster),
			}
		},
	}
}

func (d *deployment) stop() {
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

// databaseURL names a fresh database on baseURL's server.
func databaseURL(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/webhooks_bench_" + strings.ToLower(rand.Text()[:8])
	return u.String(), nil
}

func dropDatabase(dbURL string) {
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

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
