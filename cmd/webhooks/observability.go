package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/admin"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/telemetry"
	"github.com/jobhooks/jobhooks/worker"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// startTelemetry sets up traces and metrics for one process from the OTEL_*
// variables. It also installs the providers as OpenTelemetry's globals, for
// libraries that only look there; our own code is handed them explicitly.
func startTelemetry(ctx context.Context, env *environment, service string) (*telemetry.Telemetry, error) {
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: service, Version: version, Getenv: env.getenv})
	if err != nil {
		return nil, err
	}
	otel.SetTracerProvider(tel.TracerProvider)
	otel.SetMeterProvider(tel.MeterProvider)
	otel.SetTextMapPropagator(tel.Propagator)
	return tel, nil
}

// stopTelemetry flushes what is left; it runs after the context has ended.
func stopTelemetry(tel *telemetry.Telemetry, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		logger.Warn("telemetry shutdown", "error", err.Error())
	}
}

// openTracedDatabase connects to DATABASE_URL with a pgx tracer, so queries
// are spans in the trace of the request or activity that runs them.
func openTracedDatabase(ctx context.Context, cfg config.Config, tel *telemetry.Telemetry) (*pgxpool.Pool, error) {
	poolCfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	poolCfg.ConnConfig.Tracer = otelpgx.NewTracer(
		otelpgx.WithTracerProvider(tel.TracerProvider),
		otelpgx.WithMeterProvider(tel.MeterProvider),
		otelpgx.WithDisableConnectionDetailsInAttributes(),
		otelpgx.WithDisableAcquireTracer(),
	)
	pool, err := db.OpenConfig(ctx, poolCfg)
	if err != nil {
		return nil, err
	}
	// Pool size, waits and acquire times, as metrics.
	if err := otelpgx.RecordStats(pool, otelpgx.WithStatsMeterProvider(tel.MeterProvider)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database pool metrics: %w", err)
	}
	return pool, nil
}

// temporalInstrumentation returns the Temporal client options that carry the
// trace through workflows and activities and export the SDK's metrics.
func temporalInstrumentation(tel *telemetry.Telemetry) ([]interceptor.ClientInterceptor, client.MetricsHandler, error) {
	if tel == nil {
		return nil, nil, nil
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            tel.TracerProvider.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: tel.Propagator,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	metrics := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: tel.MeterProvider.Meter("go.temporal.io/sdk"),
	})
	return []interceptor.ClientInterceptor{tracing}, metrics, nil
}

// workerDeps builds the worker's dependencies with its instrumentation: a
// client span around every outbound delivery request, the delivery metrics
// recorded where each attempt's outcome is known, and the backlog gauges.
func workerDeps(cfg config.Config, logger *slog.Logger, pool *pgxpool.Pool, tc client.Client, tel *telemetry.Telemetry) worker.Deps {
	if err := telemetry.RegisterBacklog(tel.MeterProvider, deliveries.NewStore(pool).Backlog); err != nil {
		logger.Warn("no backlog metrics", "error", err.Error())
	}
	if err := telemetry.RegisterOpenBreakers(tel.MeterProvider, deliveries.NewStore(pool).OpenBreakers); err != nil {
		logger.Warn("no breaker metrics", "error", err.Error())
	}
	return worker.Deps{
		Config: cfg, Logger: logger, Pool: pool, Temporal: tc,
		WrapTransport:  deliveryTransport(tel),
		Tracer:         tel.TracerProvider.Tracer("github.com/jobhooks/jobhooks/activities"),
		ObserveAttempt: observeAttempt(tel.Delivery),
		ObserveLimits: func(ctx context.Context, limits []activities.WebhookLimit) {
			for _, l := range limits {
				tel.Delivery.InFlightLimit(ctx, l.Limit)
			}
		},
		ObserveWebhookDisabled: func(ctx context.Context, _ int64, _ string) { tel.Delivery.WebhookDisabled(ctx) },
		ObserveBreaker:         func(ctx context.Context, _ int64, _ string, open bool) { tel.Delivery.BreakerTransition(ctx, open) },
		ObserveLateAnswer: func(ctx context.Context, o activities.LateAnswerOutcome) {
			tel.Delivery.LateAnswer(ctx, o.EventType, o.StatusCode)
		},
	}
}

// deliveryTransport traces outbound deliveries. Receivers do not get a
// traceparent header: their endpoints are outside our trust boundary, and our
// trace ids are no business of theirs; the delivery id header is what both
// sides correlate on. Spans name the destination by its origin only
// (telemetry.OriginOnly): a client_url's path and query hold customers'
// secrets.
func deliveryTransport(tel *telemetry.Telemetry) func(http.RoundTripper) http.RoundTripper {
	return telemetry.OriginOnly(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(tel.TracerProvider),
			otelhttp.WithMeterProvider(tel.MeterProvider),
			otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "deliver " + r.Method }),
		)
	})
}

// observeAttempt records each finished attempt, and the delivery's end when
// the attempt settled it.
func observeAttempt(m *telemetry.DeliveryMetrics) func(context.Context, activities.AttemptOutcome) {
	return func(ctx context.Context, o activities.AttemptOutcome) {
		outcome := o.ErrorKind
		if outcome == "" {
			outcome = telemetry.AttemptSucceeded
		}
		m.AttemptFinished(ctx, telemetry.Attempt{EventType: o.EventType, Outcome: outcome, Number: int(o.Attempt), Duration: o.Duration})
		switch o.DeliveryStatus {
		case deliveries.StatusSucceeded:
			m.DeliveryFinished(ctx, o.EventType, telemetry.DeliveryDelivered, o.SinceEvent)
		case deliveries.StatusFailed:
			m.DeliveryFinished(ctx, o.EventType, telemetry.DeliveryFailed, 0)
		}
	}
}

// readinessChecks are what /readyz checks, for the API and the worker.
func readinessChecks(pool *pgxpool.Pool, tc client.Client) []admin.Check {
	return []admin.Check{
		{Name: "postgres", Check: pool.Ping},
		{Name: "temporal", Check: func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
	}
}

// withAdmin runs work while the admin endpoints (/metrics, /healthz,
// /readyz) serve on ADMIN_ADDR. When ctx ends, /readyz turns 503 at once and
// the endpoints keep answering until work has drained and returned.
func withAdmin(ctx context.Context, cfg config.Config, logger *slog.Logger, tel *telemetry.Telemetry, checks []admin.Check, work func(context.Context) error) error {
	srv := admin.New(tel.MetricsHandler(), checks, logger)
	if cfg.AdminPprof {
		srv.EnableProfiling()
	}
	adminCtx, stopAdmin := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAdmin()
	ready := make(chan string, 1)
	adminErr := make(chan error, 1)
	go func() { adminErr <- srv.ListenAndServe(adminCtx, cfg.AdminAddr, ready) }()
	select {
	case <-ready:
	case err := <-adminErr:
		return err
	}
	stopDrain := context.AfterFunc(ctx, func() {
		logger.Info("draining: readiness now reports not ready")
		srv.Drain()
	})
	defer stopDrain()

	workErr := work(ctx)
	stopAdmin()
	return errors.Join(workErr, <-adminErr)
}
