package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

// bench runs the deployment as processes of this binary (the test binary
// runs main for them, see TestMain) and prints Go benchmark lines.
func TestBench_PrintsBenchmarkLines(t *testing.T) {
	t.Setenv(runMainVariable, "1") // inherited by the API and worker processes only
	db := testenv.NewDatabase(t)
	getenv := testEnv(t, db.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut testenv.LogBuffer
	err := run(ctx, []string{"bench", "--events", "10", "--subscriptions", "2", "--concurrency", "4", "--rate", "20", "--idle", "3"}, getenv, &out, &errOut)
	stdout := out.String()
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, errOut.String())
	}
	line := regexp.MustCompile(`(?m)^BenchmarkWebhooks/events=10/subscriptions=2/concurrency=4/rate=20\t\s+1\t\s*([0-9.e+]+) deliveries/s\t\s*([0-9.e+]+) cpu-ms/delivery\t\s*[0-9.e+]+ p50-ms@rate\t\s*([0-9.e+]+) p99-ms@rate\t\s*([0-9.e+]+) p99-ms@idle$`)
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
