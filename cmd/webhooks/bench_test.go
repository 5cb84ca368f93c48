package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

// bench runs the deployment as processes of this binary (the test binary
// runs main for them, see TestMain) and prints Go benchmark lines.
func TestBench_PrintsBenchmarkLines(t *testing.T) {
	stdout := runBenchCommand(t, "--events", "10", "--subscriptions", "2", "--concurrency", "4", "--rate", "20", "--idle", "3")
	line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/shape=concentrated/events=10/subscriptions=2/concurrency=4/rate=20\t\s+1\t\s*([0-9.e+]+) deliveries/s\t\s*([0-9.e+]+) cpu-ms/delivery\t\s*[0-9.e+]+ p50-ms@rate\t\s*([0-9.e+]+) p99-ms@rate\t\s*([0-9.e+]+) p99-ms@idle$`)
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
// the ratio of their CPU per delivery.
func TestBench_BigAccountReportsBothAccountsAndTheirRatio(t *testing.T) {
	stdout := runBenchCommand(t, "--shape", "bigaccount", "--events", "10", "--subscriptions", "50", "--concurrency", "4", "--rate", "0", "--idle", "2")
	for _, part := range []string{"account-webhooks=1", "account-webhooks=50"} {
		line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/shape=bigaccount/` + part + `/events=10/subscriptions=50/concurrency=4/rate=0\t\s+1\t\s*[0-9.e+]+ deliveries/s\t\s*[0-9.e+]+ cpu-ms/delivery\t\s*[0-9.e+]+ p99-ms@idle$`)
		if !line.MatchString(stdout) {
			t.Errorf("no benchmark line of %s in:\n%s", part, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^bigaccount: CPU per delivery account-webhooks=50 / account-webhooks=1 = [0-9.]+$`).MatchString(stdout) {
		t.Errorf("no CPU ratio in:\n%s", stdout)
	}
}

func TestBench_RefusesAnUnknownShape(t *testing.T) {
	getenv := testEnv(t, "postgres://127.0.0.1:1/nothing", nil) // nothing may start
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"bench", "--shape", "uniform"}, getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `--shape: unknown workload shape "uniform": want one of concentrated, spread, zipf, bigaccount`) {
		t.Fatalf("bench --shape uniform: %v, want the shape refused with the known ones", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before refusing", out.String())
	}
}

func runBenchCommand(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv(runMainVariable, "1") // inherited by the API and worker processes only
	db := testenv.NewDatabase(t)
	getenv := testEnv(t, db.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut testenv.LogBuffer
	err := run(ctx, append([]string{"bench"}, args...), getenv, &out, &errOut)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	return out.String()
}
