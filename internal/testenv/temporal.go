package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
)

// StartTemporal starts ONE Temporal dev server (in memory, headless) for a
// whole test binary. Call it from TestMain:
//
//	var temporalAddr string
//	func TestMain(m *testing.M) {
//		addr, stop := testenv.StartTemporal(m)
//		temporalAddr = addr
//		code := m.Run()
//		stop()
//		os.Exit(code)
//	}
//
// Tests then isolate themselves with their own task queue (NewTaskQueue) in
// the "default" namespace: workflows of one test are never picked up by
// another test's worker. With TEST_TEMPORAL_ADDRESS set, that server is used
// and nothing is started. A dev server that cannot start exits the binary
// with status 1: tests never skip for lack of Temporal.
func StartTemporal(m *testing.M) (addr string, stop func()) {
	if a := os.Getenv("TEST_TEMPORAL_ADDRESS"); a != "" {
		return a, func() {}
	}
	srv, err := startDevServer(context.Background(), "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	return srv.Address, func() { _ = srv.Stop() }
}

// StartTemporalServer starts a dev server owned by one test, stopped when
// the test ends. dbFile, when not "", makes its history durable, so a test
// can stop it and start another on the same file (restart tests).
func StartTemporalServer(tb testing.TB, address, dbFile string) *devtemporal.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startDevServerAt(ctx, address, dbFile)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// FreeAddress returns a 127.0.0.1 address whose port was free a moment ago.
func FreeAddress(tb testing.TB) string {
	tb.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		tb.Fatalf("testenv: free port: %v", err)
	}
	return addr
}

// NewTaskQueue returns a task queue name no other test uses.
func NewTaskQueue(tb testing.TB) string {
	tb.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(tb.Name())
	if len(name) > 60 {
		name = name[:60]
	}
	return "test-" + name + "-" + webhooks.NewID("")[:8]
}

func startDevServer(ctx context.Context, dbFile string) (*devtemporal.Server, error) {
	addr, err := freeport.Addr()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return startDevServerAt(ctx, addr, dbFile)
}

func startDevServerAt(ctx context.Context, address, dbFile string) (*devtemporal.Server, error) {
	cli, err := devtemporal.FindCLI(ctx, os.Getenv, false, os.Stderr)
	if err != nil {
		return nil, err
	}
	logFile, err := os.CreateTemp("", "temporal-test-*.log")
	if err != nil {
		return nil, fmt.Errorf("temporal log: %w", err)
	}
	if dbFile != "" {
		dbFile, _ = filepath.Abs(dbFile)
	}
	srv, err := devtemporal.Start(ctx, devtemporal.Options{
		CLI: cli, Address: address, DBFile: dbFile, Namespace: "default", Log: logFile,
	})
	if err != nil {
		return nil, fmt.Errorf("start Temporal dev server (log %s): %w", logFile.Name(), err)
	}
	return srv, nil
}
