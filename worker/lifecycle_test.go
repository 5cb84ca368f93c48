package worker_test

import (
	"context"
	"testing"

	"github.com/jobhooks/jobhooks/worker"
)

// Ctrl-C in the first moments of `webhooks worker` or `webhooks dev` must
// stop cleanly, not report the interrupted start-up as a failure.
func TestRun_StoppedWhileStartingIsNotAnError(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := worker.Run(ctx, worker.Deps{Config: e.cfg, Logger: discardLogger(), Pool: e.db.Pool, Temporal: e.temporal})
	if err != nil {
		t.Fatalf("Run with a cancelled context = %v, want nil", err)
	}
}
