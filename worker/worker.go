// Package worker runs the Temporal worker that executes the delivery
// workflows and activities, and prepares the namespace they need.
package worker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/acme/webhooks/config"
)

// Deps are what the worker needs, passed in explicitly.
type Deps struct {
	Config   config.Config
	Logger   *slog.Logger
	Pool     *pgxpool.Pool
	Temporal client.Client
}

// Run polls the task queue until ctx ends, then stops polling and lets
// in-flight tasks finish within the configured grace period.
func Run(ctx context.Context, deps Deps) error {
	w := sdkworker.New(deps.Temporal, deps.Config.TemporalTaskQueue, sdkworker.Options{
		WorkerStopTimeout: deps.Config.ShutdownGrace,
	})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	deps.Logger.Info("worker polling", "task_queue", deps.Config.TemporalTaskQueue, "namespace", deps.Config.TemporalNamespace)
	<-ctx.Done()
	deps.Logger.Info("worker stopping", "grace", deps.Config.ShutdownGrace.String())
	w.Stop()
	return nil
}
