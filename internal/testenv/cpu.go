package testenv

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// CPUMeter reads the CPU time spent by a one-connection pool's server
// process (PostgreSQL on this machine) and by this process: on a machine
// shared with other work, CPU time varies far less than elapsed time.
type CPUMeter struct {
	backend int // the pool's backend's process id
}

// NewCPUMeter returns a meter of pool's one connection (OneConnectionPool).
func NewCPUMeter(tb testing.TB, pool *pgxpool.Pool) *CPUMeter {
	tb.Helper()
	var pid int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		tb.Fatal(err)
	}
	m := &CPUMeter{backend: pid}
	if _, err := procstat.Read(pid); err != nil {
		tb.Fatalf("testenv: the database's process is not readable here: %v", err)
	}
	return m
}

// Read returns the CPU time (user and system) spent so far by the backend
// and by this process.
func (m *CPUMeter) Read(tb testing.TB) (database, self time.Duration) {
	tb.Helper()
	st, err := procstat.Read(m.backend)
	if err != nil {
		tb.Fatal(err)
	}
	database = st.Own
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return database, self
}

// LoopPerEvent runs ingest in b's loop and reports the database's and the
// process's CPU and the elapsed time per event (events counts those ingest
// sent, from 0 when the loop starts); it returns the elapsed ns per event.
func (m *CPUMeter) LoopPerEvent(b *testing.B, events *int, ingest func()) float64 {
	*events = 0
	db0, self0 := m.Read(b)
	for b.Loop() {
		ingest()
	}
	db1, self1 := m.Read(b)
	n := float64(*events)
	perEvent := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(float64((db1-db0).Nanoseconds())/n, "db-cpu-ns/event")
	b.ReportMetric(float64((self1-self0).Nanoseconds())/n, "go-cpu-ns/event")
	b.ReportMetric(perEvent, "ns/event")
	b.ReportMetric(0, "ns/op")
	return perEvent
}
