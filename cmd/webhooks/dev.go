package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/devtemporal"
	"github.com/jobhooks/jobhooks/worker"
)

const devUsage = `Runs the whole service on one machine, for development: starts the Temporal
dev server (Web UI on the frontend port + 1000, history kept in
$WEBHOOKS_DATA_DIR/temporal.db) unless something already listens at
TEMPORAL_ADDRESS, creates and migrates the database, creates a demo account
on first run, prints a ready-to-use API token, then serves the API and runs
the worker until Ctrl-C.

Dev mode differs from serve/worker only in its defaults: a secret encryption
key and an internal API token are generated and kept in WEBHOOKS_DATA_DIR, and
loopback destinations are allowed so local receivers work. Every variable you
set is used as given.`

func runDev(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "dev", devUsage)
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	getenv, err := devEnvironment(env.getenv)
	if err != nil {
		return err
	}
	env = &environment{getenv: getenv, stdout: env.stdout, stderr: env.stderr}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
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
	if err := db.Migrate(ctx, pool, logger); err != nil {
		return err
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

	demo, err := ensureDemoAccount(ctx, identity.NewStore(pool))
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
			printDevBanner(env, cfg, addr, uiURL, demo)
		case <-gctx.Done():
		}
		return g.Wait()
	})
}

// devEnvironment wraps getenv with dev-mode defaults for what serve/worker
// require operators to set: the encryption key and internal token (generated
// once and kept in the data dir) and a loopback allowance for receivers.
func devEnvironment(getenv func(string) string) (func(string) string, error) {
	dataDir := getenv("WEBHOOKS_DATA_DIR")
	if dataDir == "" {
		dataDir = ".webhooks-dev"
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("WEBHOOKS_DATA_DIR %s: %w", dataDir, err)
	}
	defaults := map[string]string{
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8,::1/128",
		"WEBHOOKS_DATA_DIR":       dataDir,
	}
	if getenv("SECRET_ENCRYPTION_KEYS") == "" {
		key, err := readOrCreate(filepath.Join(dataDir, "secret-encryption-key"), func() string {
			return "dev1:" + base64.StdEncoding.EncodeToString(randomBytes(32))
		})
		if err != nil {
			return nil, err
		}
		defaults["SECRET_ENCRYPTION_KEYS"] = key
	}
	if getenv("INTERNAL_API_TOKEN") == "" {
		tok, err := readOrCreate(filepath.Join(dataDir, "internal-api-token"), func() string {
			return "whi_" + base64.RawURLEncoding.EncodeToString(randomBytes(32))
		})
		if err != nil {
			return nil, err
		}
		defaults["INTERNAL_API_TOKEN"] = tok
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defaults[name]
	}, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// readOrCreate returns the trimmed content of path, creating it (mode 0600)
// with make() when it does not exist.
func readOrCreate(path string, make func() string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	v := make()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return v, nil
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
	})
}

// demoAccount is what dev mode prints so the user can call the API at once.
type demoAccount struct {
	AccountID int64
	UserID    int64
	Token     string
	TokenKind string
}

// ensureDemoAccount creates a Team-plan demo account with an admin user on
// first run. Tokens are stored hashed, so on later runs it mints a fresh
// account_admin service token for the demo account instead.
func ensureDemoAccount(ctx context.Context, store *identity.Store) (demoAccount, error) {
	const name = "Demo account"
	a, found, err := store.AccountByName(ctx, name)
	if err != nil {
		return demoAccount{}, err
	}
	if !found {
		a, err = store.CreateAccount(ctx, name, "team")
		if err != nil {
			return demoAccount{}, err
		}
		userID, token, err := store.CreateUser(ctx, identity.NewUser{
			AccountID: a.ID, Email: "admin@demo.example", License: "developer", PermissionSets: []string{"account_admin"},
		})
		if err != nil {
			return demoAccount{}, err
		}
		return demoAccount{AccountID: a.ID, UserID: userID, Token: token, TokenKind: "personal API key of admin@demo.example"}, nil
	}
	_, token, err := store.CreateServiceToken(ctx, a.ID, "dev session", []string{"account_admin"})
	if err != nil {
		return demoAccount{}, err
	}
	return demoAccount{AccountID: a.ID, Token: token, TokenKind: "service token (account_admin); the admin user's key was shown on first run"}, nil
}

func printDevBanner(env *environment, cfg config.Config, apiAddr, uiURL string, demo demoAccount) {
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
	fmt.Fprintf(env.stdout, "  Internal token:     %s (for POST /internal/v1/job-run-events)\n", cfg.InternalAPIToken)
	fmt.Fprintf(env.stdout, "\nTry: curl -H 'Authorization: Token %s' %s/api/v3/accounts/%d/webhooks/subscriptions\n\n", demo.Token, base, demo.AccountID)
}
