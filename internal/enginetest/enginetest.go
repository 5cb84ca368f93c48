// Package enginetest runs the delivery engine for tests of the API, the web
// UI and the worker: a dispatch service and an in-process worker on the
// test's own task queue, allowed to deliver to loopback receivers.
package enginetest

import (
	"context"
	"encoding/base64"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/worker"
)

// Engine is a running delivery engine.
type Engine struct {
	Config   config.Config
	Temporal client.Client
	Store    *deliveries.Store
	Dispatch *dispatch.Service
}

// Start starts the engine on the database (pool at databaseURL) and the
// Temporal server at temporalAddr, with secretKey (32 bytes, id "k1")
// sealing webhook secrets; extra sets or overrides configuration variables.
// Everything stops when the test ends.
func Start(tb testing.TB, databaseURL string, pool *pgxpool.Pool, temporalAddr string, secretKey []byte, extra map[string]string) *Engine {
	tb.Helper()
	vars := map[string]string{
		"DATABASE_URL":            databaseURL,
		"TEMPORAL_ADDRESS":        temporalAddr,
		"TEMPORAL_TASK_QUEUE":     testenv.NewTaskQueue(tb),
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8",
		"SECRET_ENCRYPTION_KEYS":  "k1:" + base64.StdEncoding.EncodeToString(secretKey),
		"DELIVERY_TIMEOUT":        "5s",
		"SHUTDOWN_GRACE_PERIOD":   "2s",
	}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		tb.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		tb.Fatalf("dial Temporal: %v", err)
	}
	tb.Cleanup(tc.Close)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	e := &Engine{Config: cfg, Temporal: tc, Store: deliveries.NewStore(pool)}
	e.Dispatch = dispatch.NewService(ctx, tc, e.Store, slog.New(slog.DiscardHandler), worker.DispatchOptions(cfg))
	StartWorker(tb, worker.Deps{Config: cfg, Logger: slog.New(slog.DiscardHandler), Pool: pool, Temporal: tc})
	return e
}

// StartWorker runs worker.Run in-process until the test ends, and returns
// once the worker polls.
func StartWorker(tb testing.TB, deps worker.Deps) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	deps.Ready = ready
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, deps) }()
	stopped := false
	tb.Cleanup(func() {
		cancel()
		if stopped {
			return
		}
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			tb.Error("worker did not stop in 15s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		stopped = true
		tb.Fatalf("worker: %v", err)
	case <-time.After(60 * time.Second):
		tb.Fatal("worker not polling after 60s")
	}
}
