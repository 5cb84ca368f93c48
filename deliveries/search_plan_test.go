package deliveries_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// searchRows is how many synthetic deliveries the plan test loads.
const searchRows = 1_000_000

// statementLog records the statements a pool runs, with their arguments.
type statementLog struct {
	mu    sync.Mutex
	stmts []loggedStatement
}

type loggedStatement struct {
	SQL  string
	Args []any
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, loggedStatement{SQL: d.SQL, Args: d.Args})
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements run in a plan mode go as batches (pipelined).
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, loggedStatement{SQL: d.SQL, Args: d.Args})
}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (l *statementLog) take() []loggedStatement {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

// TestSearchDeliveries_UsesAnIndexAtAMillionDeliveries loads a million
// deliveries and checks that every filter combination of SearchDeliveries
// (page and count) is planned with an index of webhook_deliveries, never a
// sequential scan of it: with the statements' own parameter values (custom
// plan) and with PostgreSQL's generic plan, which a prepared statement
// switches to after five executions.
func TestSearchDeliveries_UsesAnIndexAtAMillionDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a million rows")
	}
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	log := &statementLog{}
	pool := db.TracedPool(t, log)

	// Five accounts share the table; the one searched has 10 webhooks (one
	// deleted), the others one each.
	ids := identity.NewStore(db.Pool)
	accounts := make([]int64, 5)
	for i := range accounts {
		a, err := ids.CreateAccount(ctx, fmt.Sprintf("plan %d", i), webhooks.PlanTeam)
		if err != nil {
			t.Fatal(err)
		}
		accounts[i] = a.ID
	}
	big := accounts[1]
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO webhook_subscriptions (id, account_id, name, client_url, event_types, secret_key_id, secret_ciphertext,
		                                   created_at, updated_at, deleted_at)
		SELECT 'wsu_plan' || a.i || '_' || h, a.id, 'hook', 'https://example.com/', ARRAY['job.run.completed'], 'k1', '\x00',
		       now(), now(), CASE WHEN h = 9 THEN now() END
		FROM unnest($1::bigint[]) WITH ORDINALITY a (id, i), generate_series(0, CASE WHEN a.i = 2 THEN 9 ELSE 0 END) h`,
		accounts); err != nil {
		t.Fatalf("subscriptions: %v", err)
	}
	// Row g is account g % 5's n-th delivery (n = g / 5): ten deliveries
	// per event (one per webhook), three events per run, 500 jobs, one in
	// 50 failed, one a second going back from now (their ids are made now:
	// the records are partitioned by the second an id carries, and no
	// partition is made for the past). The indexes that are
	// not constraints are built after the load, which is several times
	// faster than maintaining them row by row.
	start := time.Now()
	var indexes []string
	if err := pgxscanStrings(ctx, db.Pool, &indexes, `
		SELECT indexdef FROM pg_indexes i
		WHERE tablename = 'webhook_deliveries'
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		DO $$ DECLARE r record; BEGIN
		  FOR r IN SELECT indexname FROM pg_indexes i WHERE tablename = 'webhook_deliveries'
		           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname) LOOP
		    EXECUTE 'DROP INDEX ' || quote_ident(r.indexname);
		  END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
		                                status, payload, workflow_id, created_at, updated_at)
		SELECT webhook_delivery_id(now(), 'plan/' || g), ($1::bigint[])[a + 1],
		       'wsu_plan' || (a + 1) || '_' || CASE WHEN a = 1 THEN n % 10 ELSE 0 END,
		       'wev_plan' || a || '_' || (n / 10), (ARRAY['job.run.started', 'job.run.completed', 'job.run.errored'])[n / 10 % 3 + 1],
		       ((n / 30) % 500)::text, 'run' || a || '_' || (n / 30),
		       CASE WHEN n % 50 = 0 THEN 'failed' ELSE 'succeeded' END, '\x7b7d', 'plan/' || g,
		       now() - g * interval '1 second', now() - g * interval '1 second'
		FROM generate_series(0, $2::int - 1) g, LATERAL (SELECT g % 5 AS a, g / 5 AS n) x`,
		accounts, searchRows); err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, def := range indexes {
		// The table is partitioned: pg_indexes defines its indexes ON ONLY
		// the parent, which would build none of its partitions'.
		def = strings.Replace(def, " ON ONLY ", " ON ", 1)
		if _, err := db.Pool.Exec(ctx, def); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "ANALYZE webhook_deliveries; ANALYZE webhook_subscriptions"); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d deliveries in %s", searchRows, time.Since(start).Round(time.Millisecond))
	// The rows are all in one partition (their ids were made in one
	// statement, so in one second). The others are empty, and a sequential
	// scan is the right plan for an empty partition: the plans must read
	// the loaded one with an index.
	var loaded string
	var partitions int
	if err := db.Pool.QueryRow(ctx, `SELECT min(tableoid::regclass::text), count(DISTINCT tableoid) FROM webhook_deliveries`).
		Scan(&loaded, &partitions); err != nil || partitions != 1 {
		t.Fatalf("the rows are in %d partitions (err %v), want one", partitions, err)
	}
	seqScan := regexp.MustCompile(`Seq Scan on ` + loaded + `\b`)
	scanned := regexp.MustCompile(` on ` + loaded + `\b`)

	since, until := time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	cases := []struct {
		name string
		f    deliveries.SearchFilter
		want int64 // matches, -1: not checked
	}{
		{"All", deliveries.SearchFilter{}, -1},
		{"DeepPage", deliveries.SearchFilter{Offset: 5000}, -1},
		{"SinceUntil", deliveries.SearchFilter{Since: &since, Until: &until}, -1},
		{"Status", deliveries.SearchFilter{Status: deliveries.StatusFailed}, -1},
		{"EventTypeStatusSince", deliveries.SearchFilter{EventType: webhooks.EventRunErrored, Status: deliveries.StatusFailed, Since: &since}, -1},
		{"Event", deliveries.SearchFilter{EventID: "wev_plan1_12345"}, 9}, // ten webhooks, one deleted
		{"EventJobRun", deliveries.SearchFilter{EventID: "wev_plan1_12345", JobID: "115", RunID: "run1_4115"}, 9},
		{"Run", deliveries.SearchFilter{RunID: "run1_4115"}, 27},
		{"RunJobStatus", deliveries.SearchFilter{RunID: "run1_4115", JobID: "115", Status: deliveries.StatusSucceeded}, 26},
		{"Job", deliveries.SearchFilter{JobID: "115"}, 378}, // 14 runs of 30, less the deleted webhook's 3 each
		{"OtherAccountsEvent", deliveries.SearchFilter{EventID: "wev_plan2_12345"}, 0},
		{"JobSinceUntilStatus", deliveries.SearchFilter{JobID: "411", Since: &since, Until: &until, Status: deliveries.StatusFailed}, -1},
	}
	store := deliveries.NewStore(pool)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Limit = 10
			if _, total, err := store.SearchDeliveries(ctx, big, tc.f); err != nil {
				t.Fatal(err)
			} else if tc.want >= 0 && total != tc.want {
				t.Errorf("total %d, want %d", total, tc.want)
			}
			stmts := log.take()
			if len(stmts) != 2 {
				t.Fatalf("%d statements, want a page and a count", len(stmts))
			}
			for i, st := range stmts {
				for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
					plan := explain(t, db.Pool, st, mode)
					if seqScan.MatchString(plan) || !scanned.MatchString(plan) {
						t.Errorf("statement %d, %s: no index of webhook_deliveries (%s):\n%s", i, mode, loaded, plan)
					}
					if testing.Verbose() {
						t.Logf("statement %d (%s), %s:\n%s", i, strings.Fields(st.SQL)[0], mode, plan)
					}
				}
			}
		})
	}
}

// explain prepares st and explains its execution with its arguments under
// plan_cache_mode mode.
func explain(t *testing.T, pool *pgxpool.Pool, st loggedStatement, mode string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn().PgConn()
	defer func() { _, _ = c.Exec(context.Background(), "DEALLOCATE search_plan; RESET plan_cache_mode").ReadAll() }()
	args := make([]string, 0, len(st.Args))
	for _, a := range st.Args {
		args = append(args, sqlLiteral(t, a))
	}
	script := fmt.Sprintf("SET plan_cache_mode = %s; PREPARE search_plan AS %s; EXPLAIN (COSTS OFF) EXECUTE search_plan(%s)",
		mode, st.SQL, strings.Join(args, ", "))
	results, err := c.Exec(ctx, script).ReadAll()
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, script)
	}
	var lines []string
	for _, row := range results[len(results)-1].Rows {
		lines = append(lines, string(row[0]))
	}
	return strings.Join(lines, "\n")
}

// sqlLiteral writes a statement argument as a SQL literal.
func sqlLiteral(t *testing.T, a any) string {
	t.Helper()
	switch v := a.(type) {
	case nil:
		return "NULL"
	case *string:
		if v == nil {
			return "NULL"
		}
		return sqlLiteral(t, *v)
	case *time.Time:
		if v == nil {
			return "NULL"
		}
		return sqlLiteral(t, *v)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format(time.RFC3339Nano) + "'"
	case int32, int64, int:
		return fmt.Sprint(v)
	default:
		t.Fatalf("no literal for %T", a)
		return ""
	}
}

func pgxscanStrings(ctx context.Context, pool *pgxpool.Pool, out *[]string, sql string) error {
	rows, err := pool.Query(ctx, sql)
	if err != nil {
		return err
	}
	*out, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return err
}
