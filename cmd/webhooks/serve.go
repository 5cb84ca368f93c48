package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/feed"
	"github.com/jobhooks/jobhooks/formats"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/listeners"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/telemetry"
	"github.com/jobhooks/jobhooks/webhooksettings"
	"github.com/jobhooks/jobhooks/worker"
)

func runServe(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "serve", "Serves the HTTP API on HTTP_ADDR until SIGINT or SIGTERM, then drains in-flight requests.")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	logger := newLogger(env, cfg)
	tel, err := startTelemetry(ctx, env, "webhooks-api")
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, logger)
	pool, err := openTracedDatabase(ctx, cfg, tel)
	if err != nil {
		return err
	}
	defer pool.Close()
	tc, err := dialTemporal(cfg, logger, tel, true)
	if err != nil {
		return err
	}
	defer tc.Close()
	return withAdmin(ctx, cfg, logger, tel, readinessChecks(pool, tc), func(ctx context.Context) error {
		return serveAPI(ctx, cfg, logger, pool, tc, tel, nil)
	})
}

// dialTemporal connects a Temporal client. A lazy client lets the API start
// while Temporal is still coming up; /readyz reports it until then.
// tel, when not nil, adds the tracing interceptor and the SDK's metrics.
func dialTemporal(cfg config.Config, logger *slog.Logger, tel *telemetry.Telemetry, lazy bool) (client.Client, error) {
	interceptors, metrics, err := temporalInstrumentation(tel)
	if err != nil {
		return nil, err
	}
	opts := client.Options{
		HostPort:       cfg.TemporalAddress,
		Namespace:      cfg.TemporalNamespace,
		Logger:         newTemporalLogger(logger),
		Interceptors:   interceptors,
		MetricsHandler: metrics,
	}
	if cfg.TemporalGRPCCompression == "none" {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	var c client.Client
	if lazy {
		c, err = client.NewLazyClient(opts)
	} else {
		c, err = client.Dial(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	return c, nil
}

// apiDeps builds the API's dependencies; its group commits run until ctx
// ends.
func apiDeps(ctx context.Context, cfg config.Config, logger *slog.Logger, pool *pgxpool.Pool, tc client.Client, tel *telemetry.Telemetry) (api.Deps, error) {
	box, err := secretBox(cfg)
	if err != nil {
		return api.Deps{}, err
	}
	destinations, err := destinationPolicy(cfg)
	if err != nil {
		return api.Deps{}, err
	}
	store := deliveries.NewStore(pool).WithRunLinks(formats.RunLinks{Template: cfg.RunURLTemplate})
	// The API stores deliveries, so it keeps their partitions made ahead
	// itself rather than wait for a worker's retention run.
	go store.KeepPartitions(ctx, cfg.DeliveryRetention, logger)
	delivery := dispatch.NewService(ctx, tc, store, logger, worker.DispatchOptions(cfg))
	subs, err := subscriptions.NewService(subscriptions.NewStore(pool, box), destinations, subscriptions.WakeMoved(delivery))
	if err != nil {
		return api.Deps{}, err
	}
	settings, err := webhooksettings.NewService(webhooksettings.NewStore(pool, box),
		webhooksettings.DefaultOnOutage(cfg.DeliveryOnOutage), webhooksettings.WakeLanes(delivery.Waker()))
	if err != nil {
		return api.Deps{}, err
	}
	incs, err := incidents.NewService(store, incidents.NewStore(pool), box, destinations, delivery.Waker())
	if err != nil {
		return api.Deps{}, err
	}
	keys, err := signingkeys.NewService(signingkeys.NewStore(pool, box), signingkeys.Options{Overlap: cfg.SigningKeyRotationOverlap})
	if err != nil {
		return api.Deps{}, err
	}
	deps := api.Deps{
		Config:           cfg,
		SigningKeys:      keys,
		Logger:           logger,
		Identity:         identity.NewStore(pool),
		Subscriptions:    subs,
		Deliveries:       delivery,
		DeliveryReads:    deliveryreads.NewService(store),
		DeliverySettings: settings,
		Incidents:        incs,
		Feed:             feed.NewService(store, box),
		Telemetry:        tel,
		Readiness:        readinessChecks(pool, tc),
	}
	if cfg.RelayBaseURL != "" {
		deps.Listeners, err = listeners.NewService(ctx, pool, box, subs, listeners.Options{
			RelayBaseURL: cfg.RelayBaseURL, AttemptTimeout: cfg.DeliveryTimeout, Logger: logger,
			Limits: listeners.Limits{
				PollsPerListener: cfg.ListenMaxPollsPerListener, PollsPerAccount: cfg.ListenMaxPollsPerAccount,
				HeldPerAccount: cfg.ListenMaxHeldPerAccount,
			},
		})
		if err != nil {
			return api.Deps{}, err
		}
	}
	return withUI(cfg, box, deps)
}

// serveAPI serves the API until ctx ends, then shuts down gracefully. ready,
// when not nil, receives the listening address.
func serveAPI(ctx context.Context, cfg config.Config, logger *slog.Logger, pool *pgxpool.Pool, tc client.Client, tel *telemetry.Telemetry, ready chan<- string) error {
	// Ingestion outlives ctx until the server has drained its requests.
	ingestCtx, stopIngest := context.WithCancel(context.WithoutCancel(ctx))
	defer stopIngest()
	deps, err := apiDeps(ingestCtx, cfg, logger, pool, tc, tel)
	if err != nil {
		return err
	}
	defer func() {
		waitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
		defer cancel()
		deps.Deliveries.Waker().Wait(waitCtx)
	}()
	handler, err := api.NewServer(deps)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if deps.Listeners != nil {
		// Long polls would outlast the grace; they end empty, and the
		// listeners poll another replica.
		srv.RegisterOnShutdown(deps.Listeners.Drain)
	}
	logger.Info("API listening", "addr", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}
	logger.Info("API shutting down", "grace", cfg.ShutdownGrace.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down API: %w", err)
	}
	return nil
}
