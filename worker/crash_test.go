package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/worker"
)

// workerProcessEnv makes the test binary run a worker instead of tests, so a
// test can SIGKILL a real worker process.
const workerProcessEnv = "WEBHOOKS_TEST_WORKER_PROCESS"

func runWorkerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: sdklog.NewStructuredLogger(discardLogger())})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tc.Close()
	if err := worker.Run(ctx, worker.Deps{Config: cfg, Logger: discardLogger(), Pool: pool, Temporal: tc}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startWorkerProcess re-executes the test binary as a worker with cfg.
func startWorkerProcess(t *testing.T, cfg config.Config) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerProcessEnv+"=1",
		"DATABASE_URL="+cfg.DatabaseURL, "TEMPORAL_ADDRESS="+cfg.TemporalAddress,
		"TEMPORAL_TASK_QUEUE="+cfg.TemporalTaskQueue, "SECRET_ENCRYPTION_KEYS="+cfg.SecretKeys,
		"DESTINATION_ALLOW_CIDRS=127.0.0.0/8", "DELIVERY_RETRY_INITIAL_INTERVAL=100ms",
		"DELIVERY_RETRY_BACKOFF_COEFFICIENT=1", "DELIVERY_RETRY_MAX_INTERVAL=100ms")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker process: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestDeliver_WorkerKilledMidDeliveryCompletesOnce(t *testing.T) {
	e := newEnv(t, false, nil)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			arrived <- struct{}{}
			<-release // hold the first attempt until its worker is dead
		}
		w.WriteHeader(200)
	})
	defer close(release)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	proc := startWorkerProcess(t, e.cfg)
	ev := e.post(webhooks.EventRunCompleted, 8, "")
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("first attempt never arrived")
	}
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()

	e.startWorker(e.cfg)
	if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusSucceeded {
		t.Fatalf("result = %+v", res)
	}
	list, total, err := e.store.ListDeliveries(context.Background(), e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
	if err != nil || total != 1 {
		t.Fatalf("%d delivery records (%v), want 1", total, err)
	}
	rec := e.record(ev, sub.ID)
	if rec.Status != deliveries.StatusSucceeded || len(rec.Attempts) != 1 || list[0].ID != rec.ID {
		t.Errorf("record = %s with %d attempts: %+v", rec.Status, len(rec.Attempts), rec.Attempts)
	}
	got := rc.got()
	if len(got) != 2 || got[0].Header.Get("Webhook-Delivery-Id") != got[1].Header.Get("Webhook-Delivery-Id") {
		t.Errorf("receiver got %d requests; the interrupted one and the completed one must share a delivery id", len(got))
	}
}

func TestDeliver_TemporalRestartedBetweenIngestionAndDelivery(t *testing.T) {
	address := testenv.FreeAddress(t)
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	first := testenv.StartTemporalServer(t, address, dbFile)

	database := testenv.NewDatabase(t)
	cfg := testConfig(t, database.URL, address, nil)
	e := newEnvWith(t, database, cfg)
	if err := deliveries.EnsureSearchAttributes(context.Background(), e.temporal, cfg.TemporalNamespace); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	// Ingest with no worker running: accepted (202) but not delivered yet.
	body := map[string]any{"accountId": e.account.ID, "eventType": webhooks.EventRunStarted, "data": runData(4, webhooks.EventRunStarted)}
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events", cfg.InternalAPIToken, body)
	if code != http.StatusAccepted {
		t.Fatalf("ingest: %d %v", code, out)
	}
	ev := out["data"].(map[string]any)["eventId"].(string)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	testenv.StartTemporalServer(t, address, dbFile)

	e.temporal = dialTemporal(t, cfg)
	e.startWorker(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := e.temporal.GetWorkflow(ctx, deliveries.EventWorkflowID(ev), "").Get(ctx, nil); err != nil {
		t.Fatalf("event workflow after restart: %v", err)
	}
	if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusSucceeded {
		t.Fatalf("result = %+v", res)
	}
	if got := rc.got(); len(got) != 1 || !got[0].Signed {
		t.Errorf("receiver got %d requests, want 1 signed", len(got))
	}
}
