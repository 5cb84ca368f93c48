package topology_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// The bench's CPU figures count the deployment's PostgreSQL server: a
// query that burns CPU in a backend must show up in PostgresCPUTime of
// that server (Postmaster) as in that of every local server.
func TestPostgresCPUTime_CountsTheLocalServersWork(t *testing.T) {
	db := testenv.NewDatabase(t)
	postmaster := topology.Postmaster(t.Context(), db.Pool)
	if postmaster <= 0 {
		t.Fatal("the server's postmaster is not found in /proc")
	}
	// The server says which process is its postmaster: the first line of
	// postmaster.pid in its data directory.
	var dataDir string
	if err := db.Pool.QueryRow(t.Context(), "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if want, _, _ := strings.Cut(string(pidFile), "\n"); strconv.Itoa(postmaster) != want {
		t.Fatalf("Postmaster = %d, want %s (postmaster.pid)", postmaster, want)
	}
	// Each reading scans /proc on its own, and other packages' tests share
	// the server: a backend that exits between two scans is missing from
	// the second until the postmaster reaps it (its CPU then counts among
	// the postmaster's children). A few tries find two scans without one.
	var before, beforeAll time.Duration
	for range 5 {
		if before, beforeAll = topology.PostgresCPUTime(postmaster), topology.PostgresCPUTime(0); beforeAll >= before {
			break
		}
	}
	if before <= 0 || beforeAll < before {
		t.Fatalf("CPU of the server %s, of every server %s: want some, every server's at least the server's", before, beforeAll)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if used := topology.PostgresCPUTime(postmaster) - before; used < 100*time.Millisecond {
		t.Errorf("PostgreSQL used %s for 5M rows, want at least 100ms counted", used)
	}
	if used := topology.PostgresCPUTime(0) - beforeAll; used < 100*time.Millisecond {
		t.Errorf("every PostgreSQL used %s for 5M rows, want at least 100ms counted", used)
	}
}

// A process's readiness wait that ends because its caller's deadline has
// passed says so, with how long it waited, instead of blaming the process
// for its own timeout (the bench's first run on a fresh machine spent its
// deployment's budget building Temporal's server).
func TestWaitReady_SaysWhenTheCallersDeadlineEndedIt(t *testing.T) {
	p, err := topology.StartProcess("/bin/sleep", "sleeper", t.TempDir(), []string{"ADMIN_ADDR=127.0.0.1:1"}, "30")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.WaitReady(ctx, time.Minute)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("WaitReady = %v after %s, want the caller's 300ms deadline to end it", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "allowed 1m0s") {
		t.Errorf("error %q does not say what the wait allowed", err)
	}
}
