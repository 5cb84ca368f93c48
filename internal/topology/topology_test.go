package topology_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// deployment is one API and some workers against a Temporal cluster on
// PostgreSQL, each a separate process of the real binary.
type deployment struct {
	t        testing.TB
	bin, dir string
	env      []string
	cluster  *cluster
	db       *testenv.Database
	API      topology.API
	api      *topology.Process
	workers  []*topology.Process
	account  int64
	receiver *topology.Receiver
	webhooks []string
	// secretKeys is the SECRET_ENCRYPTION_KEYS of the API and workers.
	secretKeys string
}

func buildBinary(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "webhooks")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/webhooks")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build webhooks: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func randomKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func newDeployment(t testing.TB, workers, webhooks int) *deployment {
	t.Helper()
	return newDeploymentEnv(t, workers, webhooks, nil)
}

// fastRetries make a killed worker's deliveries finish soon: the retry
// schedule of the topology's tests and instant-receiver benchmarks.
var fastRetries = []string{"DELIVERY_RETRY_INITIAL_INTERVAL=1s", "DELIVERY_RETRY_MAX_INTERVAL=5s"}

// newDeploymentEnv is newDeployment with settings of its own for the API
// and workers (KEY=value, after the defaults and TOPOLOGY_ENV_*, so they
// win).
func newDeploymentEnv(t testing.TB, workers, webhooks int, env []string) *deployment {
	t.Helper()
	return newDeploymentRetrying(t, workers, webhooks, fastRetries, env)
}

// newDeploymentRetrying is newDeploymentEnv with retry settings among the
// defaults (TOPOLOGY_ENV_* overrides them); none: the production schedule.
func newDeploymentRetrying(t testing.TB, workers, webhooks int, retries, env []string) *deployment {
	t.Helper()
	dir := t.TempDir()
	d := &deployment{t: t, dir: dir, bin: buildBinary(t, dir), cluster: startCluster(t, tuningFromEnv()), db: testenv.NewMigratedDatabase(t)}
	// The processes' start has its own budget, counted once the binaries
	// are built: building Temporal's server on a fresh machine takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d.secretKeys = "topo:" + randomKey()
	internalToken := "whi_topology_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_0123456789abcdef"
	d.env = []string{
		"HOME=" + os.Getenv("HOME"),
		"DATABASE_URL=" + d.db.URL,
		"TEMPORAL_ADDRESS=" + d.cluster.Server.Address,
		"TEMPORAL_NAMESPACE=" + d.cluster.Namespace,
		"TEMPORAL_TASK_QUEUE=webhooks",
		"SECRET_ENCRYPTION_KEYS=" + d.secretKeys,
		"INTERNAL_API_TOKEN=" + internalToken,
		"DESTINATION_ALLOW_CIDRS=127.0.0.0/8",
		"SHUTDOWN_GRACE_PERIOD=5s",
		"LOG_LEVEL=warn",
	}
	d.env = append(d.env, retries...)
	// TOPOLOGY_ENV_X=v sets X=v for the API and workers (tuning runs).
	for _, kv := range os.Environ() {
		if rest, ok := strings.CutPrefix(kv, "TOPOLOGY_ENV_"); ok {
			d.env = append(d.env, rest)
		}
	}
	d.env = append(d.env, env...)
	for i := range workers {
		d.startWorker(ctx, fmt.Sprintf("worker-%d", i+1))
	}
	apiAddr := freeAddr(t)
	api, err := topology.StartProcess(d.bin, "api", dir, append(d.env, "HTTP_ADDR="+apiAddr, "ADMIN_ADDR="+freeAddr(t)), "serve")
	if err != nil {
		t.Fatal(err)
	}
	d.api = api
	t.Cleanup(func() { _ = api.Stop(10 * time.Second) })
	if err := api.WaitReady(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}

	store := identity.NewStore(d.db.Pool)
	acct, err := store.CreateAccount(ctx, "Topology", "team")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := store.CreateServiceToken(ctx, acct.ID, "topology", []string{"account_admin"})
	if err != nil {
		t.Fatal(err)
	}
	d.account = acct.ID
	d.API = topology.API{BaseURL: "http://" + apiAddr, Token: token, InternalToken: internalToken,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	rctx, rcancel := context.WithCancel(context.Background())
	t.Cleanup(rcancel)
	if d.receiver, err = topology.StartReceiver(rctx); err != nil {
		t.Fatal(err)
	}
	for i := range webhooks {
		id, secret, err := d.API.CreateWebhook(ctx, d.account, fmt.Sprintf("receiver %d", i+1), d.receiver.URL)
		if err != nil {
			t.Fatal(err)
		}
		d.receiver.Trust(id, secret, d.receiver.URL)
		d.webhooks = append(d.webhooks, id)
	}
	return d
}

// newAccount creates another account and returns its id and an API client
// holding its admin token.
func (d *deployment) newAccount(ctx context.Context) (int64, topology.API) {
	d.t.Helper()
	store := identity.NewStore(d.db.Pool)
	acct, err := store.CreateAccount(ctx, "Topology "+strconv.FormatInt(time.Now().UnixNano(), 36), "team")
	if err != nil {
		d.t.Fatal(err)
	}
	_, token, err := store.CreateServiceToken(ctx, acct.ID, "topology", []string{"account_admin"})
	if err != nil {
		d.t.Fatal(err)
	}
	api := d.API
	api.Token = token
	return acct.ID, api
}

func (d *deployment) startWorker(ctx context.Context, name string) *topology.Process {
	d.t.Helper()
	w, err := topology.StartProcess(d.bin, name, d.dir, append(d.env, "HTTP_ADDR="+freeAddr(d.t), "ADMIN_ADDR="+freeAddr(d.t)), "worker")
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = w.Stop(10 * time.Second) })
	if err := w.WaitReady(ctx, time.Minute); err != nil {
		d.t.Fatal(err)
	}
	d.workers = append(d.workers, w)
	return w
}

// ingest posts events with the given concurrency; interval > 0 paces them.
func (d *deployment) ingest(ctx context.Context, prefix string, events, concurrency int, interval time.Duration) error {
	return d.API.SendEvents(ctx, d.receiver, d.account, prefix, events, concurrency, interval)
}

// checkRecordedOnce asserts that every webhook has exactly one succeeded
// delivery record per event, and no other records.
func (d *deployment) checkRecordedOnce(ctx context.Context, events int) {
	d.t.Helper()
	q := dbq.New(d.db.Pool)
	for _, wh := range d.webhooks {
		rows, err := q.ListDeliveries(ctx, dbq.ListDeliveriesParams{SubscriptionID: wh, AccountID: d.account, RowLimit: int32(events * 2)})
		if err != nil {
			d.t.Fatal(err)
		}
		perEvent := map[string]int{}
		for _, r := range rows {
			perEvent[r.EventID]++
			if r.Status != "succeeded" {
				d.t.Errorf("webhook %s event %s: delivery %s status %s after %d attempts", wh, r.EventID, r.ID, r.Status, r.AttemptCount)
			}
		}
		if len(perEvent) != events || len(rows) != events {
			d.t.Errorf("webhook %s: %d delivery records for %d distinct events, want %d and %d", wh, len(rows), len(perEvent), events, events)
		}
		for ev, n := range perEvent {
			if n != 1 {
				d.t.Errorf("webhook %s event %s recorded %d times", wh, ev, n)
			}
		}
	}
}

// TestTopology_WorkerKillLosesNothing runs one API and two workers against
// Temporal on PostgreSQL, SIGKILLs a worker while a batch is being
// delivered, and checks every delivery arrived and is recorded exactly once.
func TestTopology_WorkerKillLosesNothing(t *testing.T) {
	const events, webhooks = 300, 2
	d := newDeployment(t, 2, webhooks)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := events * webhooks

	start := time.Now()
	ingestErr := make(chan error, 1)
	go func() { ingestErr <- d.ingest(ctx, "kill", events, 16, 0) }()

	// Kill a worker once a quarter of the deliveries are through, so it dies
	// with workflow and activity tasks in flight.
	if err := d.receiver.WaitUnique(ctx, want/4); err != nil {
		t.Fatal(err)
	}
	killedAt := d.receiver.Stats().Unique
	if err := d.workers[0].Kill(); err != nil {
		t.Fatalf("kill worker-1: %v", err)
	}
	if err := <-ingestErr; err != nil {
		t.Fatalf("ingest: %v", err)
	}
	ingested := time.Since(start)
	if err := d.receiver.WaitUnique(ctx, want); err != nil {
		t.Fatalf("after killing worker-1: %v", err)
	}
	st := d.receiver.Stats()
	elapsed := st.Last.Sub(start)
	t.Logf("worker-1 SIGKILLed after %d/%d arrivals; %d events ingested in %s; all %d deliveries arrived in %s (%.0f deliveries/s); receiver-side duplicates %d; ingest-to-arrival p50 %s p99 %s max %s",
		killedAt, want, events, ingested.Round(time.Millisecond), want, elapsed.Round(time.Millisecond), float64(want)/elapsed.Seconds(),
		st.Duplicates, st.P50.Round(time.Millisecond), st.P99.Round(time.Millisecond), st.Max.Round(time.Millisecond))
	if st.BadSignatures != 0 {
		t.Errorf("%d deliveries had a bad signature", st.BadSignatures)
	}
	// Records settle just after the receiver answers; give them a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if recordsSettled(ctx, d, events) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.checkRecordedOnce(ctx, events)
}

// recordsSettled reports whether every delivery record is final.
func recordsSettled(ctx context.Context, d *deployment, events int) bool {
	q := dbq.New(d.db.Pool)
	status := "succeeded"
	for _, wh := range d.webhooks {
		n, err := q.CountDeliveries(ctx, dbq.CountDeliveriesParams{SubscriptionID: wh, AccountID: d.account, Status: &status})
		if err != nil || n < int64(events) {
			return false
		}
	}
	return true
}

// tuningFromEnv lets benchmark runs vary the server's tuning:
// TOPOLOGY_SHARDS, TOPOLOGY_MAXCONNS, TOPOLOGY_PARTITIONS, TOPOLOGY_GOGC,
// TOPOLOGY_ASYNC_COMMIT=1.
func tuningFromEnv() topology.ServerTuning {
	t := topology.DefaultTuning
	t.HistoryShards = envInt("TOPOLOGY_SHARDS", t.HistoryShards)
	t.PersistenceMaxConns = envInt("TOPOLOGY_MAXCONNS", t.PersistenceMaxConns)
	t.TaskQueuePartitions = envInt("TOPOLOGY_PARTITIONS", t.TaskQueuePartitions)
	t.GOGC = envInt("TOPOLOGY_GOGC", t.GOGC)
	if p := os.Getenv("TOPOLOGY_SQL_PLUGIN"); p != "" {
		t.SQLPlugin = p
	}
	t.AsyncCommit = os.Getenv("TOPOLOGY_ASYNC_COMMIT") == "1"
	t.PprofPort = envInt("TOPOLOGY_TEMPORAL_PPROF", 0)
	return t
}
