package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/internal/topology"
)

// The bench's CPU figures count the local PostgreSQL: a query that burns
// CPU in a backend must show up in PostgresCPUTime.
func TestPostgresCPUTime_CountsTheLocalServersWork(t *testing.T) {
	db := testenv.NewDatabase(t)
	before := topology.PostgresCPUTime()
	if before <= 0 {
		t.Fatal("no PostgreSQL process found in /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if used := topology.PostgresCPUTime() - before; used < 100*time.Millisecond {
		t.Errorf("PostgreSQL used %s for 5M rows, want at least 100ms counted", used)
	}
}
