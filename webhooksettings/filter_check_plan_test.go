package webhooksettings_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// eventReads keeps the statements a pool runs that read webhook_events.
type eventReads struct {
	mu    sync.Mutex
	reads []pgx.TraceQueryStartData
}

func (r *eventReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM webhook_events") {
		r.mu.Lock()
		r.reads = append(r.reads, d)
		r.mu.Unlock()
	}
	return ctx
}

func (r *eventReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestService_CheckFilterReadsOnlyItsAccountsEvents: an account's latest
// events are read from its own entries of the events' index, however many
// newer events other accounts have (migration 00037): the statement that
// reads them, planned custom and generic, filters out no other account's
// rows (an empty partition's sequential scan removes none).
func TestService_CheckFilterReadsOnlyItsAccountsEvents(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	sub := f.mustCreateWebhook(t, f.a)
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 25 {
		f.mustStoreEvent(t, f.a, fmt.Sprintf("wev_a%02d", i), webhooks.EventRunErrored, "Prod", start.Add(time.Duration(i)*time.Minute))
	}
	if _, err := f.db.Pool.Exec(ctx, `
		INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, accepted_at)
		SELECT 'wev_b' || g, $1, 'job.run.errored', '42', g::text, '\x01', 'dbt', $2::timestamptz + g * interval '1 millisecond'
		FROM generate_series(1, 20000) g`, f.b.ID, start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, "ANALYZE webhook_events"); err != nil {
		t.Fatal(err)
	}

	reads := &eventReads{}
	pool := f.db.TracedPool(t, reads)
	svc, err := webhooksettings.NewService(webhooksettings.NewStore(pool, f.box))
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.CheckFilter(ctx, f.access(t, f.a), sub.ID, `true`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != webhooksettings.CheckedEvents || got[0].EventID != "wev_a24" {
		t.Fatalf("checked %d events, the first %+v; want %d, the first wev_a24", len(got), got[0], webhooksettings.CheckedEvents)
	}
	if len(reads.reads) != 1 {
		t.Fatalf("%d statements read webhook_events, want 1", len(reads.reads))
	}

	st := reads.reads[0]
	args := make([]string, len(st.Args))
	for i, a := range st.Args {
		switch v := a.(type) {
		case int64:
			args[i] = strconv.FormatInt(v, 10)
		case int32:
			args[i] = strconv.FormatInt(int64(v), 10)
		default:
			t.Fatalf("argument %d is a %T", i, a)
		}
	}
	removed := regexp.MustCompile(`Rows Removed by Filter: (\d+)`)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("SET plan_cache_mode = %s; PREPARE recent AS %s; "+
			"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE recent(%s); DEALLOCATE recent",
			mode, st.SQL, strings.Join(args, ", "))
		results, err := conn.Conn().PgConn().Exec(ctx, script).ReadAll()
		conn.Release()
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		var plan []string
		for _, row := range results[2].Rows {
			plan = append(plan, string(row[0]))
		}
		text := strings.Join(plan, "\n")
		for _, m := range removed.FindAllStringSubmatch(text, -1) {
			if m[1] != "0" {
				t.Errorf("%s: the account's latest events filtered out %s rows:\n%s", mode, m[1], text)
			}
		}
		if testing.Verbose() {
			t.Logf("%s:\n%s", mode, text)
		}
	}
}
