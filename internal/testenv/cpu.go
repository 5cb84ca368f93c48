package testenv

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// CPUMeter reads the CPU time spent by a small pool's server processes
// (PostgreSQL on this machine) and by this process: on a machine shared
// with other work, CPU time varies far less than elapsed time.
type CPUMeter struct {
	backends []int // the pool's backends' process ids
}

// NewCPUMeter returns a meter of pool's connections (OneConnectionPool, or
// a pool of a few, PoolOf): it opens all MaxConns of them now, and the pool
// must keep them for as long as the meter is read.
func NewCPUMeter(tb testing.TB, pool *pgxpool.Pool) *CPUMeter {
	tb.Helper()
	m := &CPUMeter{}
	conns := make([]*pgxpool.Conn, 0, pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		pid := int(c.Conn().PgConn().PID())
		if _, err := procstat.Read(pid); err != nil {
			tb.Fatalf("testenv: the database's process is not readable here: %v", err)
		}
		m.backends = append(m.backends, pid)
	}
	return m
}

// Read returns the CPU time (user and system) spent so far by the
// backends and by this process.
func (m *CPUMeter) Read(tb testing.TB) (database, self time.Duration) {
	tb.Helper()
	for _, pid := range m.backends {
		st, err := procstat.Read(pid)
		if err != nil {
			tb.Fatalf("testenv: the pool's backend %d: %v", pid, err)
		}
		database += st.Own
	}
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
