package deliveries

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// Delivery records and their attempts live in time partitions (migration
// 00034), by the second each delivery id carries, and events in the same
// partitions by the time they were accepted (migration 00036). Every API
// process makes them ahead of time (KeepPartitions), as does every
// retention run, which then drops each partition past the retention period
// that holds only final deliveries and no event a later redelivery still
// has (DropPartitions).

// Bounds of a partition's width.
const (
	minPartitionWidth = time.Minute
	maxPartitionWidth = 7 * 24 * time.Hour
)

// PartitionWidth is how much time one partition of delivery records spans
// for a retention period: a quarter of it, between a minute and a week. A
// record is kept at least the retention period, and at most a width more
// (and until its partition holds nothing pending): 30 days' retention keeps
// records 30 to 37 days in five or six partitions.
func PartitionWidth(retention time.Duration) time.Duration {
	return min(max(retention/4, minPartitionWidth), maxPartitionWidth).Truncate(time.Second)
}

// PartitionsAhead is how far past now the partitions must reach: two
// widths, so a process that keeps them (every PartitionWidth/4 at most a
// minute) or a retention run that was missed leaves ingestion a width's
// margin.
func PartitionsAhead(retention time.Duration) time.Duration {
	return 2 * PartitionWidth(retention)
}

// EnsurePartitions makes the partitions that delivery ids made from now
// until PartitionsAhead(retention) need, and returns how many it made.
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time, retention time.Duration) (int, error) {
	made, err := s.q.EnsureDeliveryPartitions(ctx, dbq.EnsureDeliveryPartitionsParams{
		WidthSeconds: int64(PartitionWidth(retention) / time.Second), Until: now.Add(PartitionsAhead(retention)),
	})
	if err != nil {
		return 0, fmt.Errorf("make delivery partitions: %w", err)
	}
	return int(made), nil
}

// KeepPartitions keeps the partitions made ahead until ctx ends: at once,
// then every quarter width (at most a minute). A failure is logged and
// tried again at the next tick; the margin of PartitionsAhead absorbs it.
func (s *Store) KeepPartitions(ctx context.Context, retention time.Duration, logger *slog.Logger) {
	every := min(PartitionWidth(retention)/4, time.Minute)
	for {
		if made, err := s.EnsurePartitions(ctx, time.Now(), retention); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.WarnContext(ctx, "could not make delivery partitions ahead; trying again", "error", err)
		} else if made > 0 {
			logger.InfoContext(ctx, "made delivery partitions", "partitions", made)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// boundaryClaimsKept is how long the claims of event ids made near a
// partition's start are kept: a claim matters only while an ingestion
// statement that overlaps its own could run (each is bounded to 10 s).
const boundaryClaimsKept = time.Minute

// ForgetBoundaryClaims deletes the claims of event ids that ingestion made
// near a partition's start (migration 00036) once no statement could need
// them, and returns how many went: one minute's events around each start.
func (s *Store) ForgetBoundaryClaims(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.q.ForgetBoundaryEventIDs(ctx, now.Add(-boundaryClaimsKept))
	if err != nil {
		return 0, fmt.Errorf("forget the boundary's event ids: %w", err)
	}
	return n, nil
}

// partitionedTable is a table kept in the time partitions, and the
// columns of it that the planner estimates joins and groups with over the
// whole table (its ids, and the keys it is joined or grouped on), which
// AnalyzeParent keeps statistics of; restrictions are estimated with each
// partition's own statistics, which autovacuum keeps.
type partitionedTable struct {
	name             string
	parentStatistics []string
}

// partitionedTables are the tables kept in the same time partitions, in the
// order retention detaches them: a delivery's event goes last.
var partitionedTables = []partitionedTable{
	{"webhook_delivery_attempts", []string{"delivery_id"}},
	{"webhook_deliveries", []string{"id", "event_id", "subscription_id", "account_id", "redelivery_of"}},
	{"webhook_events", []string{"id", "account_id"}},
}

// PartitionedTables are the names of the tables kept in time partitions.
func PartitionedTables() []string {
	names := make([]string, len(partitionedTables))
	for i, t := range partitionedTables {
		names[i] = t.name
	}
	return names
}

// ParentsToAnalyze returns the partitioned tables whose parent's
// statistics need analyzing. Autovacuum analyzes partitions but never a
// partitioned parent, whose statistics (each column's distinct values
// over all its partitions) are what the planner estimates a join on the
// parent with: without them, a join on an id is estimated at 1/200 of all
// rows, an estimate that grows with the table (docs/performance.md,
// "Found by soaks", the stall of 2026-11-30). A parent is analyzed when
// it never was; when its partitions now hold more than twice the rows it
// had at its last ANALYZE (at least parentRowsFloor) or fewer than half
// (autovacuum keeps each partition's count); and, when changed (a
// partition was made or dropped), when its last ANALYZE is older than
// staleAfter. Ids' distinct values are kept as a share of the rows, so
// statistics taken at the same size hold as partitions come and go: a
// retention of minutes (the soak's) changes partitions every few minutes,
// and analyzing the three parents each time cost a second of CPU and made
// every connection plan its statements again.
func (s *Store) ParentsToAnalyze(ctx context.Context, changed bool, staleAfter time.Duration) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.name FROM unnest($1::text[]) AS t(name)
		JOIN pg_class p ON p.oid = to_regclass(t.name)
		LEFT JOIN pg_stat_user_tables st ON st.relid = p.oid
		CROSS JOIN LATERAL (SELECT COALESCE(sum(GREATEST(c.reltuples, 0)), 0) AS rows
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = p.oid) k
		WHERE p.reltuples < 0
		   OR k.rows > 2 * GREATEST(p.reltuples, $2::float8)
		   OR k.rows < p.reltuples / 2
		   OR ($3::bool AND COALESCE(GREATEST(st.last_analyze, st.last_autoanalyze), '-infinity')
		                    <= now() - $4::bigint * interval '1 millisecond')`,
		PartitionedTables(), float64(parentRowsFloor), changed, staleAfter.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("partitioned tables to analyze: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("partitioned tables to analyze: %w", err)
	}
	return names, nil
}

// parentRowsFloor is the least row count a parent's growth is judged
// from: a parent analyzed while (nearly) empty is analyzed again once its
// partitions hold twice this, not at each of its first rows.
const parentRowsFloor = 500

// AnalyzeParent analyzes one partitioned table's parentStatistics: the
// parent's, from a sample over all its partitions, and (PostgreSQL 15 has
// no ANALYZE ONLY) each partition's, whose other columns keep what
// autovacuum found. Only those columns: the whole row took 2.3 times as
// long. Retention runs it when the partitions changed.
func (s *Store) AnalyzeParent(ctx context.Context, table string) error {
	i := slices.IndexFunc(partitionedTables, func(t partitionedTable) bool { return t.name == table })
	if i < 0 {
		return fmt.Errorf("analyze %q: not a partitioned table of delivery records", table)
	}
	columns := partitionedTables[i].parentStatistics
	list := make([]string, len(columns))
	for i, c := range columns {
		list[i] = pgx.Identifier{c}.Sanitize()
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE "+pgx.Identifier{table}.Sanitize()+" ("+strings.Join(list, ", ")+")"); err != nil {
		return fmt.Errorf("analyze %s: %w", table, err)
	}
	return nil
}

// dropLock names the session advisory lock one retention run at a time
// holds while it drops partitions.
const dropLock = "webhook_delivery_partitions_drop"

// DropPartitions drops the partitions of delivery records, their attempts
// and events that ended before cutoff and hold only final deliveries, and
// returns how many: a pending, retrying, paused or held delivery keeps its
// partition until it ends, and a redelivery or replay keeps its event's
// until it goes itself. Each is detached concurrently before it is
// dropped, so ingestion, claims and records never wait behind the drop (a
// plain DROP held the parent's lock). One run drops at a time; another that
// finds the lock taken drops nothing, and a partition an interrupted run
// left half detached is finished by the next.
func (s *Store) DropPartitions(ctx context.Context, cutoff time.Time) (int, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("drop delivery partitions: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", dropLock).Scan(&locked); err != nil {
		return 0, fmt.Errorf("drop delivery partitions: lock: %w", err)
	}
	if !locked {
		return 0, nil
	}
	defer func() {
		// A session lock outlives a failed statement; the connection goes
		// back to the pool, so it must be let go (or the connection closed).
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1))", dropLock); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	q := dbq.New(conn)
	names, err := q.DeliveryPartitionsPast(ctx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delivery partitions past %s: %w", cutoff.Format(time.RFC3339), err)
	}
	for i, name := range names {
		if err := dropPartition(ctx, conn, q, name); err != nil {
			return i, err
		}
	}
	return len(names), nil
}

// dropPartition detaches and drops one partition of the three tables,
// then forgets it.
func dropPartition(ctx context.Context, conn *pgxpool.Conn, q *dbq.Queries, name string) error {
	for _, table := range PartitionedTables() {
		partition := table + "_" + name
		if err := detachConcurrently(ctx, conn, table, partition); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{partition}.Sanitize()); err != nil {
			return fmt.Errorf("drop partition %s: %w", partition, err)
		}
	}
	if err := q.ForgetDeliveryPartition(ctx, name); err != nil {
		return fmt.Errorf("forget delivery partition %s: %w", name, err)
	}
	return nil
}

// detachConcurrently detaches partition from table without the lock that
// would stop every statement on table, or finishes a detach an earlier run
// left pending. A partition no longer attached (or gone) is done.
func detachConcurrently(ctx context.Context, conn *pgxpool.Conn, table, partition string) error {
	var pending bool
	err := conn.QueryRow(ctx, `SELECT i.inhdetachpending FROM pg_inherits i
		WHERE i.inhrelid = to_regclass($1) AND i.inhparent = to_regclass($2)`, partition, table).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("partition %s of %s: %w", partition, table, err)
	}
	how := " CONCURRENTLY"
	if pending {
		how = " FINALIZE"
	}
	if _, err := conn.Exec(ctx, "ALTER TABLE "+pgx.Identifier{table}.Sanitize()+" DETACH PARTITION "+
		pgx.Identifier{partition}.Sanitize()+how); err != nil {
		return fmt.Errorf("detach partition %s of %s: %w", partition, table, err)
	}
	return nil
}
