// Package worker runs the Temporal worker that executes the delivery
// workflows and activities, and prepares the namespace they need.
package worker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/formats"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/inflight"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/webhooksettings"
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
	// Tracer, when set, makes each attempt's span (in its event's trace).
	Tracer trace.Tracer
	// ObserveWebhookDisabled, when set, sees every webhook deactivated
	// automatically (metrics).
	ObserveWebhookDisabled func(ctx context.Context, accountID int64, subscriptionID string)
	// ObserveBreaker, when set, sees every breaker that opens or closes.
	ObserveBreaker func(ctx context.Context, accountID int64, subscriptionID string, open bool)
	// ObserveLateAnswer, when set, sees every late answer (metrics).
	ObserveLateAnswer func(ctx context.Context, o activities.LateAnswerOutcome)
	// ObserveAttempt, when set, sees every finished attempt (metrics).
	ObserveAttempt func(ctx context.Context, o activities.AttemptOutcome)
	// ObserveLimits, when set, sees the in-flight limits rounds report.
	ObserveLimits func(ctx context.Context, limits []activities.WebhookLimit)
	// Ready, when not nil, is closed once the worker polls.
	Ready chan<- struct{}
	// DeliveryRootCAs, when set, replaces the system's roots for verifying
	// receivers' certificates (tests trust their own CA with it).
	DeliveryRootCAs *x509.CertPool
}

// Run prepares the namespace (search attributes, schedules), then polls
// the task queue until ctx ends; then it stops polling and lets in-flight
// tasks finish within the configured grace period.
func Run(ctx context.Context, deps Deps) error {
	cfg := deps.Config
	if err := dispatch.EnsureSearchAttributes(ctx, deps.Temporal, cfg.TemporalNamespace); err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop while starting: not an error
		}
		// A cluster that does not let workers manage search attributes (for
		// example Temporal Cloud) needs them created by its operators.
		if !dispatch.OperatorAPIUnavailable(err) {
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
	if err := EnsureSchedules(ctx, deps.Temporal, cfg); err != nil {
		w.Stop()
		if ctx.Err() != nil {
			return nil // asked to stop while starting: not an error
		}
		return err
	}
	// The shards run from the start, so that operators' Updates find them;
	// one that cannot be started now is started by the first wake-up.
	if err := dispatch.NewWaker(deps.Temporal, cfg.TemporalNamespace, cfg.TemporalTaskQueue, cfg.DeliveryShards, deps.Logger).StartShards(ctx); err != nil && ctx.Err() == nil {
		deps.Logger.Warn("cannot start the delivery shards; wake-ups will", "error", err.Error())
	}
	deps.Logger.Info("worker polling", "task_queue", cfg.TemporalTaskQueue, "namespace", cfg.TemporalNamespace,
		"shards", cfg.DeliveryShards)
	if deps.Ready != nil {
		close(deps.Ready)
	}
	<-ctx.Done()
	deps.Logger.Info("worker stopping", "grace", cfg.ShutdownGrace.String())
	w.Stop()
	// Attempts that shard rounds handed over still record their outcomes.
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	activities.Drain(drainCtx, acts.Rounds)
	return nil
}

// Options are the worker's tuning. A lane round is a local activity that
// may wait for attempt slots (WORKER_MAX_CONCURRENT_DELIVERIES, shared
// fairly between accounts), so rounds and workflow tasks get their own,
// larger bound: a lane waiting for slots must not keep another account's
// lane from running.
func Options(cfg config.Config) sdkworker.Options {
	return sdkworker.Options{
		WorkerStopTimeout:                       cfg.ShutdownGrace,
		MaxConcurrentLocalActivityExecutionSize: cfg.WorkerMaxConcurrentRounds,
		MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerMaxConcurrentRounds,
		MaxConcurrentWorkflowTaskPollers:        8,
		MaxConcurrentActivityTaskPollers:        2,
	}
}

// Tuning is how the worker's rounds take and make deliveries, from the
// configuration.
func Tuning(cfg config.Config) activities.Tuning {
	return activities.Tuning{
		Shards: cfg.DeliveryShards, PageSize: cfg.DeliveryPageSize, MaxInFlight: cfg.DeliveryMaxInFlightPerWebhook,
		Linger: cfg.DeliveryRoundLinger, ClaimGather: cfg.DeliveryClaimGather, LaneIdle: cfg.DeliveryLaneIdleTimeout, Patience: cfg.DeliverySharedPatience,
		RoundsOnAnyWorker: cfg.DeliveryShardRounds == config.ShardRoundsAnyWorker,
	}
}

// DispatchOptions are the dispatch service's settings from the
// configuration.
func DispatchOptions(cfg config.Config) dispatch.Options {
	return dispatch.Options{
		Namespace: cfg.TemporalNamespace, TaskQueue: cfg.TemporalTaskQueue, ToolName: cfg.PayloadToolName,
		Shards: cfg.DeliveryShards, AttemptTimeout: cfg.DeliveryTimeout, MaxGroupEvents: cfg.IngestMaxGroupEvents,
		Flushers: cfg.IngestFlushers, IngestLinger: cfg.IngestLinger, ReplayRate: cfg.DeliveryReplayRate,
	}
}

// NewActivities builds the activities from the configuration: one of each
// type, sharing the worker's caches.
func NewActivities(deps Deps) (*activities.Set, error) {
	cfg := deps.Config
	keys, err := cfg.EncryptionKeys()
	if err != nil {
		return nil, err
	}
	box, err := secrets.NewBox(keys)
	if err != nil {
		return nil, err
	}
	policy, err := DestinationPolicy(cfg)
	if err != nil {
		return nil, err
	}
	httpTimeout := cfg.DeliveryTimeout + cfg.DeliveryLateAnswerWait
	var tlsConfig *tls.Config // nil: the system's roots
	if deps.DeliveryRootCAs != nil {
		tlsConfig = &tls.Config{RootCAs: deps.DeliveryRootCAs}
	}
	return activities.New(activities.Deps{
		Store:         deliveries.NewStore(deps.Pool).WithRunLinks(formats.RunLinks{Template: cfg.RunURLTemplate}),
		IncidentStore: incidents.NewStore(deps.Pool),
		Box:           box,
		HTTP:          activities.NewHTTPClientTLS(policy, httpTimeout, deps.WrapTransport, tlsConfig),
		Logger:        deps.Logger,
		Settings: activities.SettingsDeps{
			Source: webhooksettings.NewStore(deps.Pool, box),
			// A webhook's client certificate goes out with the same policy,
			// limits and roots as every delivery.
			HTTPWithCertificate: func(cert tls.Certificate) *http.Client {
				return activities.NewHTTPClientTLS(policy, httpTimeout, deps.WrapTransport, activities.WithClientCertificate(tlsConfig, cert))
			},
		},
		// Accounts' signing keys are read at most once per
		// signingkeys.FreshFor, not per delivery.
		SigningKeys: signingkeys.NewCache(signingkeys.NewStore(deps.Pool, box), nil),
		Waker:       dispatch.NewWaker(deps.Temporal, cfg.TemporalNamespace, cfg.TemporalTaskQueue, cfg.DeliveryShards, deps.Logger),
		Tuning:      Tuning(cfg),
		Schedule: deliveries.Schedule{
			Initial: cfg.DeliveryRetryInitial, Coefficient: cfg.DeliveryRetryBackoff,
			Max: cfg.DeliveryRetryMaxInterval, RetryAfterMax: cfg.DeliveryRetryAfterMax,
		},
		AttemptTimeout: cfg.DeliveryTimeout,
		LateAnswerWait: cfg.DeliveryLateAnswerWait,
		AutoDisable: deliveries.AutoDisable{
			After: cfg.DeliveryAutoDisableAfter, MinFailures: cfg.DeliveryAutoDisableMinFailures,
		},
		Breaker: deliveries.Breaker{
			Threshold: cfg.DeliveryBreakerThreshold, ProbeFirst: cfg.DeliveryBreakerProbeFirst,
			ProbeMax: cfg.DeliveryBreakerProbeMax, RampStart: cfg.DeliveryBreakerRampStart, RampFull: cfg.DeliveryBreakerRampFull,
			OnOutage: cfg.DeliveryOnOutage,
		},
		OrderMaxWait: cfg.DeliveryOrderMaxWait,
		Incidents: activities.IncidentPolicy{
			NoticeAfter: cfg.IncidentNoticeAfter, Quiet: cfg.IncidentQuiet, MaxPerHour: cfg.NoticesMaxPerHour,
		},
		Notices:                dispatch.NewNotices(deps.Temporal, cfg.TemporalNamespace, cfg.TemporalTaskQueue),
		ObserveBreaker:         deps.ObserveBreaker,
		ObserveWebhookDisabled: deps.ObserveWebhookDisabled,
		ObserveLateAnswer:      deps.ObserveLateAnswer,
		OverdueGrace:           cfg.DeliveryOverdueGrace,
		Attempts:               fairshare.New(cfg.WorkerMaxConcurrentDeliver, perAccount(cfg)),
		InFlight: inflight.New(inflight.Options{MaxLimit: cfg.DeliveryMaxInFlightPerWebhook,
			MaxDestinationLimit: cfg.DeliveryMaxInFlightPerDestination, InitialLimit: cfg.DeliveryInitialInFlight,
			InitialDestinationLimit: cfg.DeliveryInitialInFlightPerDestination}),
		ObserveAttempt: deps.ObserveAttempt,
		ObserveLimits:  deps.ObserveLimits,
		Tracer:         deps.Tracer,
	}), nil
}

// DestinationPolicy is where deliveries may go, from the DESTINATION_*
// settings, and the listener relay at RELAY_BASE_URL: the API (create and
// update checks) and the worker (connection-time checks) must apply the
// same one.
func DestinationPolicy(cfg config.Config) (*netguard.Policy, error) {
	allow, err := cfg.AllowedCIDRs()
	if err != nil {
		return nil, fmt.Errorf("configuration: DESTINATION_ALLOW_CIDRS: %w", err)
	}
	p := &netguard.Policy{Allow: allow, RequireHTTPS: cfg.DestinationRequireHTTPS}
	if cfg.RelayBaseURL != "" {
		p.Internal = []string{webhooks.RelayPrefix(cfg.RelayBaseURL)}
	}
	return p, nil
}

// Register registers the workflows under their stable names and the
// activities under their method names (unique across the types: a name
// registered twice panics).
func Register(w sdkworker.Registry, acts *activities.Set) {
	workflows.RegisterAll(w)
	for _, a := range []any{acts.Rounds, acts.Routes, acts.Notices, acts.Maintenance, acts.Replays, acts.TestDeliveries} {
		w.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	}
}

// perAccount is the most attempt slots one account holds at once.
func perAccount(cfg config.Config) int {
	if cfg.WorkerMaxConcurrentDeliverPerAccount > 0 {
		return cfg.WorkerMaxConcurrentDeliverPerAccount
	}
	return max(cfg.WorkerMaxConcurrentDeliver/2, 1)
}
