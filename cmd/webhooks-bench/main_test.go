package main

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

// The bench runs the deployment as processes of the webhooks binary and
// prints Go benchmark lines.
func TestBench_PrintsBenchmarkLines(t *testing.T) {
	stdout := runBench(t, "--events", "10", "--subscriptions", "2", "--concurrency", "4", "--rate", "20", "--idle", "3")
	line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/shape=concentrated/events=10/subscriptions=2/concurrency=4/rate=20\t\s+1\t\s*([0-9.e+]+) deliveries/s\t\s*([0-9.e+]+) cpu-ms/delivery\t\s*[0-9.e+]+ p50-ms@rate\t\s*([0-9.e+]+) p99-ms@rate\t\s*([0-9.e+]+) cpu-ms/delivery@rate\t\s*([0-9.e+]+) p99-ms@idle$`)
	m := line.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no benchmark line in:\n%s", stdout)
	}
	for i, unit := range []string{"deliveries/s", "cpu-ms/delivery"} {
		if v, _ := strconv.ParseFloat(m[i+1], 64); v <= 0 {
			t.Errorf("%s = %s, want > 0", unit, m[i+1])
		}
	}
}

// bigaccount measures two accounts, each on a line of its own, and prints
// the ratio of their CPU per delivery. 200 events: the CPU of a burst of
// 10 (20 ms) could read 0 at the clock's 10 ms tick, and then no ratio.
func TestBench_BigAccountReportsBothAccountsAndTheirRatio(t *testing.T) {
	stdout := runBench(t, "--shape", "bigaccount", "--events", "200", "--subscriptions", "50", "--concurrency", "4", "--rate", "0", "--idle", "2")
	for _, part := range []string{"account-webhooks=1", "account-webhooks=50"} {
		line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/shape=bigaccount/` + part + `/events=200/subscriptions=50/concurrency=4/rate=0\t\s+1\t\s*[0-9.e+]+ deliveries/s\t\s*[0-9.e+]+ cpu-ms/delivery\t\s*[0-9.e+]+ p99-ms@idle$`)
		if !line.MatchString(stdout) {
			t.Errorf("no benchmark line of %s in:\n%s", part, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^bigaccount: CPU per delivery account-webhooks=50 / account-webhooks=1 = [0-9.]+$`).MatchString(stdout) {
		t.Errorf("no CPU ratio in:\n%s", stdout)
	}
}

func TestBench_RefusesAnUnknownShape(t *testing.T) {
	getenv := benchEnv("postgres://127.0.0.1:1/nothing") // nothing may start
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"--shape", "uniform", "--webhooks", "/nonexistent"}, getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `--shape: unknown workload shape "uniform": want one of concentrated, spread, zipf, bigaccount, runs`) {
		t.Fatalf("--shape uniform: %v, want the shape refused with the known ones", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before refusing", out.String())
	}
}

// Receiver shapes run one after the other on one deployment, each on a
// line of its own with what the receiver saw.
func TestBench_ReceiverShapesReportWhatTheReceiverSaw(t *testing.T) {
	stdout := runBench(t, "--receiver", "instant,delay", "--receiver-delay", "50ms", "--events", "10", "--subscriptions", "1",
		"--concurrency", "4", "--rate", "0", "--idle", "0", "--drain", "1m")
	for _, r := range []string{"instant", "delay-50ms"} {
		line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/shape=concentrated/receiver=` + r + `/events=10/subscriptions=1/concurrency=4/rate=0\t.* 10 requests\t\s*0 429s\t\s*0 429s-after-5s\t\s*0 timeouts\t.* 0 missing\t\s*1 all-within-1m$`)
		if !line.MatchString(stdout) {
			t.Errorf("no benchmark line of receiver %s with its load in:\n%s", r, stdout)
		}
	}
	if !strings.Contains(stdout, "concentrated receiver=delay-50ms burst, receiver's view: 10 requests for 10 deliveries") {
		t.Errorf("no receiver's view in:\n%s", stdout)
	}
}

func TestBench_RefusesAnUnknownReceiver(t *testing.T) {
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"--receiver", "delay,slow", "--webhooks", "/nonexistent"}, benchEnv("postgres://127.0.0.1:1/nothing"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `--receiver: unknown receiver "slow": want one of instant, delay, knee, 429`) {
		t.Fatalf("--receiver delay,slow: %v, want the receiver refused with the known ones", err)
	}
}

func TestBench_RefusesUnexpectedArguments(t *testing.T) {
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"concentrated"}, benchEnv("postgres://127.0.0.1:1/nothing"), &out, &errOut)
	if err != errUsage {
		t.Fatalf("run concentrated: %v, want the usage error", err)
	}
	if !strings.Contains(errOut.String(), "unexpected arguments: concentrated") || !strings.Contains(errOut.String(), "Usage: webhooks-bench") {
		t.Errorf("stderr %q, want the argument named and the usage", errOut.String())
	}
}

// benchEnv is the environment of one in-process run of the bench.
func benchEnv(databaseURL string) func(string) string {
	vars := map[string]string{"DATABASE_URL": databaseURL}
	// Where the pinned Temporal CLI is comes from the real environment.
	for _, k := range []string{"TEMPORAL_CLI", "WEBHOOKS_TOOLS_DIR"} {
		vars[k] = os.Getenv(k)
	}
	return func(k string) string { return vars[k] }
}

var (
	webhooksOnce sync.Once
	webhooksBin  string
	webhooksErr  error
	webhooksDir  string
)

// webhooksBinary builds the binary under measurement once for all tests,
// the way the bench builds it without --webhooks.
func webhooksBinary(t *testing.T) string {
	t.Helper()
	webhooksOnce.Do(func() {
		if webhooksDir, webhooksErr = os.MkdirTemp("", "webhooks-bench-test-"); webhooksErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		webhooksBin, webhooksErr = buildWebhooks(ctx, webhooksDir)
	})
	if webhooksErr != nil {
		t.Fatal(webhooksErr)
	}
	return webhooksBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if webhooksDir != "" {
		os.RemoveAll(webhooksDir)
	}
	os.Exit(code)
}

func runBench(t *testing.T, args ...string) string {
	t.Helper()
	db := testenv.NewDatabase(t)
	getenv := benchEnv(db.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut testenv.LogBuffer
	err := run(ctx, append([]string{"--webhooks", webhooksBinary(t)}, args...), getenv, &out, &errOut)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	return out.String()
}
