package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/worker"
)

const devUsage = `Runs the whole service on one machine, for development: starts the Temporal
dev server (Web UI on the frontend port + 1000, history kept in
$WEBHOOKS_DATA_DIR/temporal.db) unless something already listens at
TEMPORAL_ADDRESS, creates and migrates the database, creates a demo account
on first run, prints a ready-to-use API token, then serves the API and runs
the worker until Ctrl-C. The Temporal dev server stops with dev, even when dev
is killed; a server dev did not start is used and left running.

The demo token is kept in WEBHOOKS_DATA_DIR and shown again on later runs
while it still works; the internal token is shown only when dev generated it.

Dev mode differs from serve/worker only in its defaults: a secret encryption
key and an internal API token are generated and kept in WEBHOOKS_DATA_DIR, and
loopback destinations are allowed so local receivers work, and the listener
relay (webhooks listen) is reached at HTTP_ADDR. Every variable you set is
used as given.`

func runDev(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "dev", devUsage)
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	defaults, err := devEnvironment(env.getenv)
	if err != nil {
		return err
	}
	env = &environment{getenv: defaults.getenv, stdout: env.stdout, stderr: env.stderr}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if cfg.RelayBaseURL == "" {
		cfg.RelayBaseURL = devRelayBaseURL(cfg.HTTPAddr)
	}
	logger := newLogger(env, cfg)

	if err := db.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	pool, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrateForPeople(ctx, pool, env.stderr); err != nil {
		return err
	}

	// A dev server an earlier dev of ours left behind (that dev was killed)
	// is replaced, so this run owns, and stops, the server it uses. One that
	// someone else runs at TEMPORAL_ADDRESS is used and left alone.
	stopped, err := devtemporal.StopLeftover(filepath.Join(cfg.DataDir, devTemporalPIDFile), filepath.Join(cfg.DataDir, "temporal.db"), 15*time.Second)
	if err != nil {
		return err
	}
	if stopped {
		logger.Info("stopped the Temporal dev server an earlier dev left running")
	}
	uiURL := ""
	if !devtemporal.Reachable(cfg.TemporalAddress) {
		srv, err := startDevTemporal(ctx, env, cfg)
		if err != nil {
			return err
		}
		defer func() {
			logger.Info("stopping Temporal dev server")
			_ = srv.Stop()
		}()
		uiURL = srv.UIURL
		if cfg.TemporalWebUIURL == "" {
			cfg.TemporalWebUIURL = uiURL
		}
	} else {
		logger.Info("using the Temporal server already listening", "addr", cfg.TemporalAddress)
	}

	tel, err := startTelemetry(ctx, env, "webhooks-dev")
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, logger)
	tc, err := dialTemporal(cfg, logger, tel, false)
	if err != nil {
		return err
	}
	defer tc.Close()

	demo, err := ensureDemoAccount(ctx, identity.NewStore(pool), filepath.Join(cfg.DataDir, devDemoTokenFile))
	if err != nil {
		return err
	}

	return withAdmin(ctx, cfg, logger, tel, readinessChecks(pool, tc), func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		ready := make(chan string, 1)
		g.Go(func() error { return serveAPI(gctx, cfg, logger, pool, tc, tel, ready) })
		g.Go(func() error {
			return worker.Run(gctx, workerDeps(cfg, logger, pool, tc, tel))
		})
		select {
		case addr := <-ready:
			printDevBanner(env, cfg, addr, uiURL, demo, defaults.internalTokenGenerated)
		case <-gctx.Done():
		}
		return g.Wait()
	})
}

// migrateForPeople migrates the database and says so in one line: in dev a
// person reads the terminal, and a JSON line per migration (what `migrate`
// logs for a log pipeline) buries the banner.
func migrateForPeople(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	m, err := db.Migrate(ctx, pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	if m.Applied > 0 {
		fmt.Fprintf(w, "database migrated to version %d\n", m.Version)
	} else {
		fmt.Fprintf(w, "database up to date (version %d)\n", m.Version)
	}
	return nil
}

func startDevTemporal(ctx context.Context, env *environment, cfg config.Config) (*devtemporal.Server, error) {
	cli, err := devtemporal.FindCLI(ctx, env.getenv, true, env.stderr)
	if err != nil {
		return nil, err
	}
	_, portText, _ := net.SplitHostPort(cfg.TemporalAddress)
	port, _ := strconv.Atoi(portText)
	logFile, err := os.OpenFile(filepath.Join(cfg.DataDir, "temporal.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("temporal log: %w", err)
	}
	fmt.Fprintf(env.stderr, "starting Temporal dev server at %s (log: %s)...\n", cfg.TemporalAddress, logFile.Name())
	return devtemporal.Start(ctx, devtemporal.Options{
		CLI:       cli,
		Address:   cfg.TemporalAddress,
		UIPort:    port + 1000,
		DBFile:    filepath.Join(cfg.DataDir, "temporal.db"),
		Namespace: cfg.TemporalNamespace,
		Log:       logFile,
		PIDFile:   filepath.Join(cfg.DataDir, devTemporalPIDFile),
	})
}

// printDevBanner shows what to call the service with. It shows the internal
// token only when dev generated it: one the operator supplied is theirs, and
// may be a production secret that must not land in a terminal's scrollback.
func printDevBanner(env *environment, cfg config.Config, apiAddr, uiURL string, demo demoAccount, internalTokenGenerated bool) {
	base := "http://" + apiAddr
	fmt.Fprintln(env.stdout, "")
	fmt.Fprintln(env.stdout, "Webhook service running (dev mode). Ctrl-C stops everything.")
	fmt.Fprintf(env.stdout, "  API:                %s\n", base)
	fmt.Fprintf(env.stdout, "  Web UI:             %s/ui (sign in with the token below)\n", base)
	if uiURL != "" {
		fmt.Fprintf(env.stdout, "  Temporal Web UI:    %s\n", uiURL)
	}
	fmt.Fprintf(env.stdout, "  Temporal:           %s (namespace %s, task queue %s)\n", cfg.TemporalAddress, cfg.TemporalNamespace, cfg.TemporalTaskQueue)
	fmt.Fprintf(env.stdout, "  Account id:         %d\n", demo.AccountID)
	if demo.UserID != 0 {
		fmt.Fprintf(env.stdout, "  User id:            %d\n", demo.UserID)
	}
	fmt.Fprintf(env.stdout, "  Token:              %s\n", demo.Token)
	fmt.Fprintf(env.stdout, "                      (%s)\n", demo.TokenKind)
	if internalTokenGenerated {
		fmt.Fprintf(env.stdout, "  Internal token:     %s (for POST /internal/v1/job-run-events; kept in %s)\n",
			cfg.InternalAPIToken, filepath.Join(cfg.DataDir, devInternalTokenFile))
	} else {
		fmt.Fprintln(env.stdout, "  Internal token:     the INTERNAL_API_TOKEN you set (for POST /internal/v1/job-run-events)")
	}
	if cfg.RelayBaseURL != "" {
		fmt.Fprintln(env.stdout, "  Listen locally:     webhooks listen --forward-to http://localhost:3000/webhooks (no inbound port needed)")
	}
	fmt.Fprintf(env.stdout, "\nTry: curl -H 'Authorization: Token %s' %s/api/v3/accounts/%d/webhooks/subscriptions\n\n", demo.Token, base, demo.AccountID)
}

// devRelayBaseURL is where dev's worker reaches its own API's relay: the
// API's listen address, with a wildcard host made loopback. "" when the
// port is chosen at listen time (HTTP_ADDR port 0): listening is off then.
func devRelayBaseURL(httpAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil || port == "0" {
		return ""
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
