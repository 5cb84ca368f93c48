package testenv

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CPUMeter reads the CPU time spent by a one-connection pool's server
// process (PostgreSQL on this machine) and by this process: on a machine
// shared with other work, CPU time varies far less than elapsed time.
type CPUMeter struct {
	backendStat string // /proc/<pid>/stat of the pool's backend
}

// NewCPUMeter returns a meter of pool's one connection (OneConnectionPool).
func NewCPUMeter(tb testing.TB, pool *pgxpool.Pool) *CPUMeter {
	tb.Helper()
	var pid int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		tb.Fatal(err)
	}
	m := &CPUMeter{backendStat: fmt.Sprintf("/proc/%d/stat", pid)}
	if _, err := m.backend(); err != nil {
		tb.Fatalf("testenv: the database's process is not readable here: %v", err)
	}
	return m
}

// Read returns the CPU time (user and system) spent so far by the backend
// and by this process.
func (m *CPUMeter) Read(tb testing.TB) (database, self time.Duration) {
	tb.Helper()
	database, err := m.backend()
	if err != nil {
		tb.Fatal(err)
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

// backend reads utime and stime (fields 14 and 15, in clock ticks of
// 1/100 s on Linux) of the backend.
func (m *CPUMeter) backend() (time.Duration, error) {
	raw, err := os.ReadFile(m.backendStat)
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("%s: %d fields", m.backendStat, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14, 15 overall
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", m.backendStat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
