package topology

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LatencyWindow gathers ingest-to-arrival latencies until they are taken,
// interval by interval (Receiver.ObserveLatencies adds to it).
type LatencyWindow struct {
	mu  sync.Mutex
	lat []time.Duration
}

// Add notes one delivery's latency.
func (w *LatencyWindow) Add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lat = append(w.lat, d)
}

// Take returns the latencies noted since the last Take, sorted, and starts
// a new interval.
func (w *LatencyWindow) Take() []time.Duration {
	w.mu.Lock()
	lat := w.lat
	w.lat = nil
	w.mu.Unlock()
	slices.Sort(lat)
	return lat
}

// SoakPlan lays out a soak's webhooks: accounts of ten, each webhook for a
// job of its own, and one part whose Paced events are one event to each
// webhook, in webhook order (what a SteadySender goes round). failing says
// which webhooks point at a receiver that answers 500: share of them,
// spread evenly, so every stretch of the round has its share.
func SoakPlan(webhooks int, share float64) (plan Plan, failing []bool, err error) {
	if webhooks < 1 || share < 0 || share >= 1 {
		return Plan{}, nil, fmt.Errorf("soak: want at least one webhook and a failing share in [0, 1), got %d and %g", webhooks, share)
	}
	b := &planner{Plan: Plan{Shape: "soak", Size: Size{Webhooks: webhooks}}}
	events := make([]EventSpec, webhooks)
	for i := range events {
		if i%accountWebhooks == 0 {
			b.account(fmt.Sprintf("soak %d", i/accountWebhooks+1))
		}
		events[i] = b.to(b.webhook(len(b.Accounts) - 1))
	}
	b.Parts = []PartPlan{{Paced: events}}
	return b.Plan, spreadEvenly(webhooks, int(float64(webhooks)*share+0.5)), nil
}

// ParseShare reads a share as a percentage ("5%") or a fraction ("0.05"),
// between 0 and 1 (100 %) excluded.
func ParseShare(s string) (float64, error) {
	v, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if percent {
		f /= 100
	}
	if err != nil || f < 0 || f >= 1 {
		return 0, fmt.Errorf("want a share such as 5%% or 0.05, below 100 %%, got %q", s)
	}
	return f, nil
}

// spreadEvenly marks k of n slots, as evenly apart as whole slots allow.
func spreadEvenly(n, k int) []bool {
	marked := make([]bool, n)
	for j := range k {
		marked[j*n/k] = true
	}
	return marked
}

// SoakSample is what a soak saw over one sampling interval, and the state
// of the deployment at its end.
type SoakSample struct {
	At       time.Duration // since the traffic started, at the interval's end
	Interval time.Duration
	// Sent events were accepted (202); Delivered deliveries first arrived
	// at the healthy receiver, with Latencies (sorted) from their event's
	// 202; FailedRequests were answered 500 by the failing receiver.
	Sent, Delivered, FailedRequests int
	Latencies                       []time.Duration
	// RSS is each process's resident memory in bytes, by name (api,
	// worker-1, ..., temporal).
	RSS map[string]int64
	// AppDB and TemporalDB are the databases' sizes in bytes
	// (pg_database_size; Temporal's two together); Tables the app
	// database's largest tables with their indexes and TOAST.
	AppDB, TemporalDB int64
	Tables            []TableSize
	// Records are the app database's deliveries by status; OldestPending
	// the age of its oldest delivery not final (0: none).
	Records       map[string]int64
	OldestPending time.Duration
	// Partitions are the names of the delivery records' time partitions,
	// oldest first: which were made and dropped since the last sample.
	Partitions []string
	// Statements are what the servers' statements have cost so far
	// (ReadStatements; nil without pg_stat_statements): the app database's
	// execution and planning time in each interval.
	Statements Statements
}

// P50 and P99 are the interval's latency percentiles.
func (s SoakSample) P50() time.Duration { return Percentile(s.Latencies, 50) }
func (s SoakSample) P99() time.Duration { return Percentile(s.Latencies, 99) }

// TableSize is one table's size on disk, indexes and TOAST included.
type TableSize struct {
	Name  string
	Bytes int64
}

// RSS is a process's resident set size in bytes (Linux /proc; 0 when it
// cannot be read, for example after the process ended).
func RSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return vmRSS(b)
}

// vmRSS reads the VmRSS line of /proc/PID/status ("VmRSS:  1234 kB").
func vmRSS(status []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// DatabaseSizes is the total size in bytes of the named databases on
// pool's server.
func DatabaseSizes(ctx context.Context, pool *pgxpool.Pool, names ...string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT COALESCE(sum(pg_database_size(datname)), 0)::bigint FROM pg_database WHERE datname = ANY($1)`, names).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("database sizes: %w", err)
	}
	return n, nil
}

// Autovacuum says whether pool's server runs autovacuum. Without it the
// space of deleted rows is never reused, so a database grows at its insert
// rate whatever retention deletes (the local test cluster turns it off;
// scripts/bench-postgres starts one with it on).
func Autovacuum(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var on string
	if err := pool.QueryRow(ctx, "SHOW autovacuum").Scan(&on); err != nil {
		return false, fmt.Errorf("show autovacuum: %w", err)
	}
	return on == "on", nil
}

// LargestTables are the top tables of pool's database by total size (a
// partitioned table's partitions together).
func LargestTables(ctx context.Context, pool *pgxpool.Pool, top int) ([]TableSize, error) {
	rows, err := pool.Query(ctx, `
		SELECT `+partitionedName+`, sum(pg_total_relation_size(t.relid))::bigint FROM `+partitionedTables+`
		GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`, top)
	if err != nil {
		return nil, fmt.Errorf("largest tables: %w", err)
	}
	defer rows.Close()
	var out []TableSize
	for rows.Next() {
		var t TableSize
		if err := rows.Scan(&t.Name, &t.Bytes); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeliveryRecords counts the app database's deliveries by status, and
// says how old its oldest delivery not final is.
func DeliveryRecords(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, time.Duration, error) {
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM webhook_deliveries GROUP BY status`)
	if err != nil {
		return nil, 0, fmt.Errorf("deliveries by status: %w", err)
	}
	byStatus := map[string]int64{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("deliveries by status: %w", err)
		}
		byStatus[status] = n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("deliveries by status: %w", err)
	}
	var oldest float64
	err = pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM webhook_delivery_queue`).Scan(&oldest)
	if err != nil {
		return nil, 0, fmt.Errorf("oldest pending delivery: %w", err)
	}
	return byStatus, time.Duration(oldest * float64(time.Second)), nil
}

// DeliveryPartitions lists the delivery records' time partitions, oldest
// first.
func DeliveryPartitions(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT name FROM webhook_delivery_partitions ORDER BY starts_at`)
	if err != nil {
		return nil, fmt.Errorf("delivery partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("delivery partitions: %w", err)
	}
	return names, nil
}

// PartitionChanges is how many partitions were made and dropped between two
// samples' lists.
func PartitionChanges(before, after []string) (made, dropped int) {
	for _, n := range after {
		if !slices.Contains(before, n) {
			made++
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			dropped++
		}
	}
	return made, dropped
}
