package main

import (
	"context"

	"github.com/jobhooks/jobhooks/worker"
)

func runWorker(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "worker", "Runs the Temporal worker that delivers webhooks, until SIGINT or SIGTERM;\nthen it stops polling and lets in-flight deliveries finish within SHUTDOWN_GRACE_PERIOD.")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	logger := newLogger(env, cfg)
	tel, err := startTelemetry(ctx, env, "webhooks-worker")
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, logger)
	pool, err := openTracedDatabase(ctx, cfg, tel)
	if err != nil {
		return err
	}
	defer pool.Close()
	tc, err := dialTemporal(cfg, logger, tel, false)
	if err != nil {
		return err
	}
	defer tc.Close()
	return withAdmin(ctx, cfg, logger, tel, readinessChecks(pool, tc), func(ctx context.Context) error {
		return worker.Run(ctx, workerDeps(cfg, logger, pool, tc, tel))
	})
}
