package devtemporal_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
)

func startServer(t *testing.T, dir string) *devtemporal.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := devtemporal.FindCLI(ctx, os.Getenv, false, os.Stderr)
	if err != nil {
		t.Fatalf("the pinned Temporal CLI is required (scripts/test installs it): %v", err)
	}
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devtemporal.Start(ctx, devtemporal.Options{
		CLI: cli, Address: addr, DBFile: filepath.Join(dir, "temporal.db"), PIDFile: filepath.Join(dir, "temporal.pid"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Kill() })
	return srv
}

func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return len(b) == 0 || !containsState(string(b), 'Z')
}

func containsState(stat string, state byte) bool {
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == state
		}
	}
	return false
}

// A server whose starter died without stopping it is found through the pid
// file and stopped; Stop removes the pid file.
func TestStopLeftover_StopsOurServer(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	pidFile := filepath.Join(dir, "temporal.pid")
	if b, err := os.ReadFile(pidFile); err != nil || string(b) != strconv.Itoa(srv.PID())+"\n" {
		t.Fatalf("pid file = %q, %v; want %d", b, err, srv.PID())
	}

	stopped, err := devtemporal.StopLeftover(pidFile, filepath.Join(dir, "temporal.db"), 15*time.Second)
	if err != nil || !stopped {
		t.Fatalf("StopLeftover = %v, %v; want the server stopped", stopped, err)
	}
	if running(srv.PID()) || devtemporal.Reachable(srv.Address) {
		t.Fatal("the leftover server still runs")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("pid file left behind: %v", err)
	}
}

func TestStop_RemovesThePIDFile(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "temporal.pid")); !os.IsNotExist(err) {
		t.Fatalf("pid file after Stop: %v", err)
	}
}

// A pid file that names anything but our dev server on our database (a
// reused pid, another data dir's server) is discarded, the process untouched.
func TestStopLeftover_LeavesOtherProcessesAlone(t *testing.T) {
	dir := t.TempDir()
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	pidFile := filepath.Join(dir, "temporal.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped, err := devtemporal.StopLeftover(pidFile, filepath.Join(dir, "temporal.db"), time.Second)
	if err != nil || stopped {
		t.Fatalf("StopLeftover = %v, %v; want nothing stopped", stopped, err)
	}
	if !running(other.Process.Pid) {
		t.Fatal("StopLeftover killed a process that is not our dev server")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("stale pid file kept: %v", err)
	}
	if stopped, err := devtemporal.StopLeftover(pidFile, filepath.Join(dir, "temporal.db"), time.Second); stopped || err != nil {
		t.Fatalf("without a pid file: %v, %v", stopped, err)
	}
}
