// Package worker runs the Temporal worker that executes the delivery
// workflows and activities, and prepares the namespace they need.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/workflows"
)

// Deps are what the worker needs, passed in explicitly.
type Deps struct {
	Config   config.Config
	Logger   *slog.Logger
	Pool     *pgxpool.Pool
	Temporal client.Client
	// WrapTransport, when set, wraps the delivery HTTP transport (tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// ObserveAttempt, when set, sees every finished attempt (metrics).
	ObserveAttempt func(ctx context.Context, o activities.AttemptOutcome)
	// Ready, when not nil, is closed once the worker polls.
	Ready chan<- struct{}
}

// Run prepares the namespace (search attributes, retention schedule), then
// polls the task queue until ctx ends; then it stops polling and lets
// in-flight tasks finish within the configured grace period.
func Run(ctx context.Context, deps Deps) error {
	cfg := deps.Config
	if err := deliveries.EnsureSearchAttributes(ctx, deps.Temporal, cfg.TemporalNamespace); err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop while starting: not an error
		}
		// A cluster that does not let workers manage search attributes (for
		// example Temporal Cloud) needs them created by its operators.
		if !deliveries.OperatorAPIUnavailable(err) {
			return err
		}
		deps.Logger.Warn("cannot register search attributes; create them in the namespace", "error", err.Error())
	}
	acts, err := NewActivities(deps)
	if err != nil {
		return err
	}
	w := sdkworker.New(deps.Temporal, cfg.TemporalTaskQueue, Options(cfg))
	Register(w, acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if err := EnsureRetentionSchedule(ctx, deps.Temporal, cfg); err != nil {
		w.Stop()
		if ctx.Err() != nil {
			return nil // asked to stop while starting: not an error
		}
		return err
	}
	deps.Logger.Info("worker polling", "task_queue", cfg.TemporalTaskQueue, "namespace", cfg.TemporalNamespace)
	if deps.Ready != nil {
		close(deps.Ready)
	}
	<-ctx.Done()
	deps.Logger.Info("worker stopping", "grace", cfg.ShutdownGrace.String())
	w.Stop()
	return nil
}

// Options are the worker's tuning: deliveries run as local activities, so
// their concurrency is the local activity limit.
func Options(cfg config.Config) sdkworker.Options {
	return sdkworker.Options{
		WorkerStopTimeout:                       cfg.ShutdownGrace,
		MaxConcurrentLocalActivityExecutionSize: cfg.WorkerMaxConcurrentDeliver,
		MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerMaxConcurrentDeliver,
		// Event workflow tasks arrive through matching (the API starts them
		// without eager dispatch); more pollers drain a burst faster (bench:
		// 45/s with 8, 58-71/s with 32, 62/s with 64, 57/s autoscaling).
		MaxConcurrentWorkflowTaskPollers: 32,
		MaxConcurrentActivityTaskPollers: 2,
	}
}

// NewActivities builds the activities from the configuration.
func NewActivities(deps Deps) (*activities.Activities, error) {
	cfg := deps.Config
	keys, err := cfg.EncryptionKeys()
	if err != nil {
		return nil, err
	}
	box, err := secrets.NewBox(keys)
	if err != nil {
		return nil, err
	}
	allow, err := cfg.AllowedCIDRs()
	if err != nil {
		return nil, fmt.Errorf("configuration: DESTINATION_ALLOW_CIDRS: %w", err)
	}
	policy := &netguard.Policy{Allow: allow, RequireHTTPS: cfg.DestinationRequireHTTPS}
	store := deliveries.NewStore(deps.Pool)
	return activities.New(activities.Deps{
		Store:          store,
		Service:        deliveries.NewService(deps.Temporal, store, cfg),
		Box:            box,
		HTTP:           activities.NewHTTPClient(policy, cfg.DeliveryTimeout, deps.WrapTransport),
		Logger:         deps.Logger,
		ObserveAttempt: deps.ObserveAttempt,
		// Each local activity slot may hold a page of first attempts, so
		// the attempts themselves are bounded too.
		MaxConcurrentAttempts: cfg.WorkerMaxConcurrentDeliver,
	}), nil
}

// Register registers the workflows and activities under their stable names.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.Event, workflow.RegisterOptions{Name: deliveries.EventWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.LegacyEvent, workflow.RegisterOptions{Name: deliveries.LegacyEventWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.PurgeOldDeliveries, workflow.RegisterOptions{Name: deliveries.RetentionWorkflowName})
	w.RegisterActivityWithOptions(acts.MatchSubscriptions, activity.RegisterOptions{Name: deliveries.MatchSubscriptionsName})
	w.RegisterActivityWithOptions(acts.StartDeliveryRetries, activity.RegisterOptions{Name: deliveries.StartRetriesName})
	w.RegisterActivityWithOptions(acts.StartEventDeliveries, activity.RegisterOptions{Name: deliveries.LegacyStartDeliveries})
	w.RegisterActivityWithOptions(acts.AttemptDelivery, activity.RegisterOptions{Name: deliveries.AttemptDeliveryName})
	w.RegisterActivityWithOptions(acts.AttemptDeliveries, activity.RegisterOptions{Name: deliveries.AttemptDeliveriesName})
	w.RegisterActivityWithOptions(acts.PurgeDeliveryRecords, activity.RegisterOptions{Name: deliveries.PurgeDeliveriesName})
	w.RegisterActivityWithOptions(acts.RecordDeliveryFailure, activity.RegisterOptions{Name: deliveries.RecordFailureName})
}
