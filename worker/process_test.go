package worker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
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
		"DELIVERY_RETRY_BACKOFF_COEFFICIENT=1", "DELIVERY_RETRY_MAX_INTERVAL=100ms",
		"DELIVERY_TIMEOUT="+cfg.DeliveryTimeout.String())
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

// triggerNow runs a schedule's action now, whatever runs of it are open:
// tests share one dev server, and a run an earlier test's schedule started
// on that test's task queue (its worker gone) must not make this one skip.
func triggerNow() client.ScheduleTriggerOptions {
	return client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}
}
