package topology

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Statement is what one statement (all its plans and parameters) has cost
// its server so far, as pg_stat_statements counts it.
type Statement struct {
	Calls    int64
	Rows     int64
	Exec     time.Duration // execution time, all calls
	WALBytes int64
	// WALFPI is how many full-page images its WAL held: the first change
	// of a page after a checkpoint writes the whole page.
	WALFPI int64
	// Plans and Plan are how often it was planned and for how long, where
	// the server tracks planning (pg_stat_statements.track_planning, on in
	// scripts/bench-postgres; else zero): a prepared statement is planned
	// again on each connection after a relation its plan reads changed (an
	// ANALYZE, a VACUUM's new statistics, a partition made or dropped).
	Plans int64
	Plan  time.Duration
}

// Statements are a server's statements by name: a sqlc query by its name
// (IngestEvents), another statement of the service's database by its
// first words, and each other database's statements (Temporal's) as one,
// "[database]".
type Statements map[string]Statement

// ErrNoStatementStats: the server does not preload pg_stat_statements
// (scripts/bench-postgres starts one that does).
var ErrNoStatementStats = errors.New("pg_stat_statements is not loaded on this server (scripts/bench-postgres starts one that preloads it)")

// ReadStatements reads what every statement on pool's server has cost so
// far, its own database's by statement and the others' by database.
func ReadStatements(ctx context.Context, pool *pgxpool.Pool) (Statements, error) {
	rows, err := pool.Query(ctx, `
		SELECT d.datname = current_database(), d.datname, s.query, s.calls, s.rows,
		       s.total_exec_time, s.wal_bytes::bigint, s.wal_fpi, s.plans, s.total_plan_time
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE s.query NOT LIKE '%pg_stat_statements%' AND s.query NOT LIKE '%pg_stat_user_tables%'`)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoStatementStats, err)
	}
	defer rows.Close()
	out := Statements{}
	for rows.Next() {
		var own bool
		var db, query string
		var st Statement
		var execMs, planMs float64
		if err := rows.Scan(&own, &db, &query, &st.Calls, &st.Rows, &execMs, &st.WALBytes, &st.WALFPI, &st.Plans, &planMs); err != nil {
			return nil, fmt.Errorf("read pg_stat_statements: %w", err)
		}
		st.Exec = time.Duration(execMs * float64(time.Millisecond))
		st.Plan = time.Duration(planMs * float64(time.Millisecond))
		name := "[" + db + "]"
		if own {
			name = statementName(query)
		}
		out[name] = out[name].plus(st)
	}
	return out, rows.Err()
}

func (s Statement) plus(o Statement) Statement {
	return Statement{Calls: s.Calls + o.Calls, Rows: s.Rows + o.Rows, Exec: s.Exec + o.Exec, WALBytes: s.WALBytes + o.WALBytes,
		WALFPI: s.WALFPI + o.WALFPI, Plans: s.Plans + o.Plans, Plan: s.Plan + o.Plan}
}

func (s Statement) minus(o Statement) Statement {
	return Statement{Calls: s.Calls - o.Calls, Rows: s.Rows - o.Rows, Exec: s.Exec - o.Exec, WALBytes: s.WALBytes - o.WALBytes,
		WALFPI: s.WALFPI - o.WALFPI, Plans: s.Plans - o.Plans, Plan: s.Plan - o.Plan}
}

var sqlcName = regexp.MustCompile(`^\s*-- name: (\w+)`)

// statementName is a sqlc query's name, or another statement's first
// words.
func statementName(query string) string {
	if m := sqlcName.FindStringSubmatch(query); m != nil {
		return m[1]
	}
	words := strings.Fields(query)
	if len(words) > 6 {
		words = words[:6]
	}
	return strings.Join(words, " ")
}

// Own is what the app database's statements cost together (every name
// but the other databases').
func (s Statements) Own() Statement {
	var all Statement
	for name, st := range s {
		if !strings.HasPrefix(name, "[") {
			all = all.plus(st)
		}
	}
	return all
}

// Since is what each statement cost after before was read.
func (s Statements) Since(before Statements) Statements {
	out := Statements{}
	for name, st := range s {
		d := st.minus(before[name])
		if d.Calls > 0 || d.Plans > 0 {
			out[name] = d
		}
	}
	return out
}

// StatementCost is one statement's cost per delivery.
type StatementCost struct {
	Name                string
	CallsPerDelivery    float64
	MsPerDelivery       float64
	RowsPerCall         float64
	WALBytesPerDelivery float64
	// FPIPerDelivery is the full-page images of its WAL per delivery.
	FPIPerDelivery float64
	// PlansPerDelivery and PlanMsPerDelivery are its planning (zero where
	// the server does not track it).
	PlansPerDelivery  float64
	PlanMsPerDelivery float64
}

// PerDelivery is the cost of the statements per delivery: the top most
// expensive by time, the rest of the service's database as "other", each
// other database, and "all" (every database).
func (s Statements) PerDelivery(deliveries, top int) []StatementCost {
	if deliveries <= 0 {
		return nil
	}
	var own, others []string
	for name := range s {
		if strings.HasPrefix(name, "[") {
			others = append(others, name)
		} else {
			own = append(own, name)
		}
	}
	// By time, planning included: a statement planned again and again
	// costs its server what it took to plan.
	byTime := func(a, b string) int { return cmp.Compare(s[b].Exec+s[b].Plan, s[a].Exec+s[a].Plan) }
	slices.SortFunc(own, byTime)
	slices.Sort(others)
	cost := func(name string, st Statement) StatementCost {
		c := StatementCost{Name: name, CallsPerDelivery: float64(st.Calls) / float64(deliveries),
			MsPerDelivery:       float64(st.Exec.Microseconds()) / 1000 / float64(deliveries),
			WALBytesPerDelivery: float64(st.WALBytes) / float64(deliveries), FPIPerDelivery: float64(st.WALFPI) / float64(deliveries),
			PlansPerDelivery: float64(st.Plans) / float64(deliveries), PlanMsPerDelivery: float64(st.Plan.Microseconds()) / 1000 / float64(deliveries)}
		if st.Calls > 0 {
			c.RowsPerCall = float64(st.Rows) / float64(st.Calls)
		}
		return c
	}
	var out []StatementCost
	var rest, all Statement
	for i, name := range own {
		if i < top {
			out = append(out, cost(name, s[name]))
		} else {
			rest = rest.plus(s[name])
		}
		all = all.plus(s[name])
	}
	if rest.Calls > 0 {
		out = append(out, cost("other", rest))
	}
	for _, name := range others {
		out = append(out, cost(name, s[name]))
		all = all.plus(s[name])
	}
	return append(out, cost("all", all))
}

// StatementTable writes costs as a table, a statement a line.
func StatementTable(costs []StatementCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %10s %10s %9s %10s %9s %10s %10s\n", "statement", "ms/deliv", "calls/del", "rows/call", "WAL B/del", "FPI/del",
		"plans/del", "plan ms/d")
	for _, c := range costs {
		name := c.Name
		if len(name) > 40 {
			name = name[:39] + "…"
		}
		fmt.Fprintf(&b, "%-40s %10.3f %10.3f %9.1f %10.0f %9.3f %10.4f %10.3f\n", name, c.MsPerDelivery, c.CallsPerDelivery, c.RowsPerCall,
			c.WALBytesPerDelivery, c.FPIPerDelivery, c.PlansPerDelivery, c.PlanMsPerDelivery)
	}
	return b.String()
}

// partitionedTables is pg_stat_user_tables t with each partition's parent
// (p, none for a table that is not a partition), and partitionedName the
// name a partition is counted under: its parent's.
const (
	partitionedTables = `pg_stat_user_tables t
		LEFT JOIN pg_inherits inh ON inh.inhrelid = t.relid
		LEFT JOIN pg_class p ON p.oid = inh.inhparent`
	partitionedName = `COALESCE(p.relname, t.relname)`
)

// Table is what one table of the app's database has been written so far
// (pg_stat_user_tables): rows inserted, updated (HOT: without new index
// entries), deleted.
type Table struct {
	Inserts, Updates, HOTUpdates, Deletes int64
	Indexes                               int
	// Bytes is the table's size on disk with its indexes and TOAST.
	Bytes int64
	// Relations are Bytes by relation: "heap" (the main fork), "maps" (the
	// free space and visibility maps, and an unlogged table's init fork),
	// "toast" (with its index) and each
	// index by its name (a partition's index by its parent index's name).
	Relations map[string]int64
}

// Tables are the app database's tables by name.
type Tables map[string]Table

// relationSizes are the bytes on disk of every table's heap, TOAST and
// indexes, a partition's under its parent's names: an index of the
// parent's by the parent index's name, an index of the partition's own
// (the events partitions' primary keys) by its name with the partition's
// name replaced by the parent's.
const relationSizes = `
	SELECT ` + partitionedName + `, r.rel, sum(r.bytes)::bigint
	FROM ` + partitionedTables + `
	JOIN pg_class tc ON tc.oid = t.relid
	CROSS JOIN LATERAL (
		SELECT 'heap' AS rel, pg_relation_size(t.relid, 'main') AS bytes
		UNION ALL
		SELECT 'maps', pg_relation_size(t.relid, 'fsm') + pg_relation_size(t.relid, 'vm') + pg_relation_size(t.relid, 'init')
		UNION ALL
		SELECT 'toast', COALESCE(pg_total_relation_size(NULLIF(tc.reltoastrelid, 0)), 0)
		UNION ALL
		SELECT COALESCE(pi.relname, CASE WHEN p.relname IS NOT NULL AND starts_with(ic.relname::text, t.relname::text)
			THEN p.relname || substr(ic.relname, length(t.relname) + 1) ELSE ic.relname END), pg_relation_size(ic.oid)
		FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
		LEFT JOIN pg_inherits ii ON ii.inhrelid = ic.oid LEFT JOIN pg_class pi ON pi.oid = ii.inhparent
		WHERE x.indrelid = t.relid
	) r
	GROUP BY 1, 2`

// ReadTables reads what each table of pool's database has been written so
// far; a partitioned table's figures are its partitions' together.
func ReadTables(ctx context.Context, pool *pgxpool.Pool) (Tables, error) {
	rows, err := pool.Query(ctx, `
		SELECT `+partitionedName+` AS name, sum(t.n_tup_ins)::bigint, sum(t.n_tup_upd)::bigint,
		       sum(t.n_tup_hot_upd)::bigint, sum(t.n_tup_del)::bigint,
		       max((SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid))::int,
		       sum(pg_total_relation_size(t.relid))::bigint
		FROM `+partitionedTables+`
		GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	out := Tables{}
	for rows.Next() {
		var name string
		var t Table
		if err := rows.Scan(&name, &t.Inserts, &t.Updates, &t.HOTUpdates, &t.Deletes, &t.Indexes, &t.Bytes); err != nil {
			return nil, fmt.Errorf("read pg_stat_user_tables: %w", err)
		}
		out[name] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	if err := readRelations(ctx, pool, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readRelations fills each table's Relations.
func readRelations(ctx context.Context, pool *pgxpool.Pool, tables Tables) error {
	rows, err := pool.Query(ctx, relationSizes)
	if err != nil {
		return fmt.Errorf("read relation sizes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, rel string
		var n int64
		if err := rows.Scan(&table, &rel, &n); err != nil {
			return fmt.Errorf("read relation sizes: %w", err)
		}
		t, ok := tables[table]
		if !ok {
			continue
		}
		if t.Relations == nil {
			t.Relations = map[string]int64{}
		}
		t.Relations[rel] = n
		tables[table] = t
	}
	return rows.Err()
}

// TableCost is what a burst wrote to one table per delivery, and the
// index entries that took: one per index for an insert or an update that
// is not HOT.
type TableCost struct {
	Name                                    string
	Indexes                                 int
	Inserts, Updates, HOTShare, IndexWrites float64 // per delivery; HOTShare of updates
	// Bytes is how much the table grew on disk (indexes and TOAST
	// included) per delivery.
	Bytes float64
	// Relations is Bytes by relation (Table.Relations), largest first.
	Relations []RelationBytes
}

// RelationBytes is how much one relation of a table grew per delivery.
type RelationBytes struct {
	Name  string
	Bytes float64
}

// PerDelivery is what was written to each table after before was read,
// per delivery, the tables most index entries first.
func (t Tables) PerDelivery(before Tables, deliveries int) []TableCost {
	if deliveries <= 0 {
		return nil
	}
	var out []TableCost
	for name, a := range t {
		b := before[name]
		ins, upd, hot := a.Inserts-b.Inserts, a.Updates-b.Updates, a.HOTUpdates-b.HOTUpdates
		if ins == 0 && upd == 0 {
			continue
		}
		c := TableCost{Name: name, Indexes: a.Indexes,
			Inserts: float64(ins) / float64(deliveries), Updates: float64(upd) / float64(deliveries),
			IndexWrites: float64((ins+upd-hot)*int64(a.Indexes)) / float64(deliveries),
			Bytes:       float64(a.Bytes-b.Bytes) / float64(deliveries)}
		if upd > 0 {
			c.HOTShare = float64(hot) / float64(upd)
		}
		for rel, n := range a.Relations {
			if grew := n - b.Relations[rel]; grew != 0 {
				c.Relations = append(c.Relations, RelationBytes{Name: rel, Bytes: float64(grew) / float64(deliveries)})
			}
		}
		slices.SortFunc(c.Relations, func(x, y RelationBytes) int {
			return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), strings.Compare(x.Name, y.Name))
		})
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y TableCost) int {
		return cmp.Or(cmp.Compare(y.IndexWrites, x.IndexWrites), strings.Compare(x.Name, y.Name))
	})
	return out
}

// TableTable writes table costs as a table, a table a line.
func TableTable(costs []TableCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %7s %9s %9s %6s %12s %11s\n", "table", "indexes", "ins/deliv", "upd/deliv", "HOT", "index wr/del", "bytes/deliv")
	var bytes float64
	for _, c := range costs {
		fmt.Fprintf(&b, "%-32s %7d %9.3f %9.3f %5.0f%% %12.2f %11.0f\n", c.Name, c.Indexes, c.Inserts, c.Updates, 100*c.HOTShare, c.IndexWrites, c.Bytes)
		bytes += c.Bytes
	}
	fmt.Fprintf(&b, "%-32s %7s %9s %9s %6s %12s %11.0f\n", "all", "", "", "", "", "", bytes)
	return b.String()
}

// RelationTable writes where each table's bytes went, a relation a line,
// for the tables that grew by at least minBytes a delivery.
func RelationTable(costs []TableCost, minBytes float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-48s %11s\n", "table", "relation", "bytes/deliv")
	for _, c := range costs {
		if c.Bytes < minBytes {
			continue
		}
		for _, r := range c.Relations {
			fmt.Fprintf(&b, "%-32s %-48s %11.0f\n", c.Name, r.Name, r.Bytes)
		}
	}
	return b.String()
}
