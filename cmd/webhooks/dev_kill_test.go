package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// runMainVariable makes the test binary run the real program (main) instead
// of the tests, so a test can start `webhooks dev` as a process and kill it.
const runMainVariable = "WEBHOOKS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainVariable) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startDevProcess runs `webhooks dev` as a child process with getenv's
// variables and waits for its banner.
func startDevProcess(t *testing.T, getenv func(string) string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "dev")
	cmd.Env = []string{runMainVariable + "=1", "HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH")}
	for _, k := range append(config.Names(), "TEMPORAL_CLI", "WEBHOOKS_TOOLS_DIR") {
		if v := getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stdout, stderr testenv.LogBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(3 * time.Minute)
	for !bannerToken.MatchString(stdout.String()) {
		select {
		case <-exited:
			t.Fatalf("dev exited before its banner; stderr:\n%s", stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner within 3m; stderr:\n%s", stderr.String())
		}
	}
	return cmd
}

func temporalPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, devTemporalPIDFile))
	if err != nil {
		t.Fatalf("dev did not record its Temporal dev server: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// processGone waits up to limit for pid to exit (or be a zombie of a dead parent's reaper).
func processGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// dev owns the Temporal dev server it starts: killing dev (SIGKILL, no
// chance to clean up) takes the server with it, and the next dev starts its
// own and stops it on SIGTERM.
func TestDev_TemporalDevServerDoesNotOutliveDev(t *testing.T) {
	admin := testenv.NewDatabase(t)
	name := admin.Name + "_devkill"
	url := strings.Replace(admin.URL, "/"+admin.Name+"?", "/"+name+"?", 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	dataDir := t.TempDir()
	temporalAddr := freeTemporalAddr(t)
	getenv := testEnv(t, url, map[string]string{"TEMPORAL_ADDRESS": temporalAddr, "WEBHOOKS_DATA_DIR": dataDir})
	t.Cleanup(func() { // a server that outlived dev, when this test fails
		_, _ = devtemporal.StopLeftover(filepath.Join(dataDir, devTemporalPIDFile), filepath.Join(dataDir, "temporal.db"), 5*time.Second)
	})

	first := startDevProcess(t, getenv)
	pid := temporalPID(t, dataDir)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid, 30*time.Second) {
		t.Fatalf("the Temporal dev server (pid %d) outlived a SIGKILLed dev", pid)
	}

	second := startDevProcess(t, getenv)
	pid2 := temporalPID(t, dataDir)
	if pid2 == pid {
		t.Fatalf("second dev reports the first one's server (pid %d)", pid)
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !processGone(second.Process.Pid, time.Minute) || !processGone(pid2, 30*time.Second) {
		t.Fatal("dev or its Temporal dev server still runs after SIGTERM")
	}
	if devtemporal.Reachable(temporalAddr) {
		t.Fatal("something still listens at TEMPORAL_ADDRESS after dev stopped")
	}
	if _, err := os.Stat(filepath.Join(dataDir, devTemporalPIDFile)); !os.IsNotExist(err) {
		t.Fatalf("pid file left after a clean stop: %v", err)
	}
}
