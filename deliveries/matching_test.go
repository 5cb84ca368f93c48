package deliveries_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// matchHook is a webhook a matching case creates through the subscription
// store, and what then happens to it.
type matchHook struct {
	name         string
	types        []string // nil: job.run.completed
	jobs         []int64
	inactive     bool
	deleted      bool
	newJobs      *[]int64 // an update of job_ids after creation
	otherAccount bool
}

// TestIngestEvents_Match: an event gets a delivery for each webhook of its
// account that names its type and is for every job or lists its job
// (pending when the webhook is active, skipped when it is not), and none
// for any other webhook, whatever job_ids was changed to; the same from
// the statement with routing's steps as from the one without.
func TestIngestEvents_Match(t *testing.T) {
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprintf("Routed=%v", routed), func(t *testing.T) { testIngestEventsMatch(t, routed) })
	}
}

func testIngestEventsMatch(t *testing.T, routed bool) {
	f, pool := newMatchFixture(t)
	ids := identity.NewStore(pool)
	none := map[string]string{}
	cases := []struct {
		name  string
		hooks []matchHook
		job   string
		want  map[string]string // webhook name -> delivery status
	}{
		{"AllJobs", []matchHook{{name: "all"}}, "42", map[string]string{"all": "pending"}},
		{"ListedJob", []matchHook{{name: "listed", jobs: []int64{7, 42}}, {name: "other", jobs: []int64{7}}}, "42",
			map[string]string{"listed": "pending"}},
		{"AllJobsAndListed", []matchHook{{name: "all"}, {name: "listed", jobs: []int64{42}}}, "42",
			map[string]string{"all": "pending", "listed": "pending"}},
		{"RepeatedJobID", []matchHook{{name: "listed", jobs: []int64{42, 42}}}, "42", map[string]string{"listed": "pending"}},
		{"LargestJobID", []matchHook{{name: "listed", jobs: []int64{999_999_999_999_999_999}}}, "999999999999999999",
			map[string]string{"listed": "pending"}},
		{"NonNumericJob", []matchHook{{name: "all"}, {name: "listed", jobs: []int64{42}}}, "x42",
			map[string]string{"all": "pending"}},
		{"NineteenDigitJob", []matchHook{{name: "all"}, {name: "listed", jobs: []int64{1_234_567_890_123_456_789}}},
			"1234567890123456789", map[string]string{"all": "pending"}},
		{"EventTypeNotSubscribed", []matchHook{{name: "all", types: []string{webhooks.EventRunStarted}},
			{name: "listed", types: []string{webhooks.EventRunErrored}, jobs: []int64{42}}}, "42", none},
		{"Inactive", []matchHook{{name: "all", inactive: true}, {name: "listed", jobs: []int64{42}, inactive: true},
			{name: "active", jobs: []int64{42}}}, "42",
			map[string]string{"all": "skipped", "listed": "skipped", "active": "pending"}},
		{"InactiveOtherJob", []matchHook{{name: "listed", jobs: []int64{7}, inactive: true}}, "42", none},
		{"Deleted", []matchHook{{name: "all", deleted: true}, {name: "listed", jobs: []int64{42}, deleted: true},
			{name: "inactive", jobs: []int64{42}, inactive: true, deleted: true}}, "42", none},
		{"JobIDsChangedAway", []matchHook{{name: "moved", jobs: []int64{42}, newJobs: &[]int64{43}}}, "42", none},
		{"JobIDsChangedTo", []matchHook{{name: "moved", jobs: []int64{42}, newJobs: &[]int64{43}}}, "43",
			map[string]string{"moved": "pending"}},
		{"JobIDsChangedToAllJobs", []matchHook{{name: "widened", jobs: []int64{42}, newJobs: &[]int64{}}}, "99",
			map[string]string{"widened": "pending"}},
		{"JobIDsChangedFromAllJobs", []matchHook{{name: "narrowed", newJobs: &[]int64{5}}}, "99", none},
		{"OtherAccount", []matchHook{{name: "all", otherAccount: true}, {name: "listed", jobs: []int64{42}, otherAccount: true},
			{name: "inactive", jobs: []int64{42}, inactive: true, otherAccount: true}}, "42", none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			account := func(name string) int64 {
				a, err := ids.CreateAccount(ctx, name, webhooks.PlanTeam)
				if err != nil {
					t.Fatal(err)
				}
				return a.ID
			}
			own, other := account(tc.name), account(tc.name+" other")
			names := map[string]string{} // webhook id -> name
			for _, h := range tc.hooks {
				sub := webhooks.Subscription{AccountID: own, Name: h.name, ClientURL: "https://example.com/hook",
					EventTypes: h.types, JobIDs: h.jobs, Active: !h.inactive}
				if sub.EventTypes == nil {
					sub.EventTypes = []string{webhooks.EventRunCompleted}
				}
				if h.otherAccount {
					sub.AccountID = other
				}
				created, _, err := f.subs.Create(ctx, sub)
				if err != nil {
					t.Fatal(err)
				}
				if h.newJobs != nil {
					if _, err := f.subs.Update(ctx, sub.AccountID, created.ID, webhooks.SubscriptionUpdate{JobIDs: h.newJobs}); err != nil {
						t.Fatal(err)
					}
				}
				if h.deleted {
					if err := f.subs.Delete(ctx, sub.AccountID, created.ID); err != nil {
						t.Fatal(err)
					}
				}
				names[created.ID] = h.name
			}
			ev := deliveries.NewEvent{ID: "wev_match_" + tc.name, AccountID: own, Type: webhooks.EventRunCompleted,
				JobID: tc.job, RunID: "1", ToolName: "dbt", Routed: routed}
			res, lanes, err := f.store.IngestEvents(ctx, []deliveries.NewEvent{ev})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || !res[0].AccountKnown || !res[0].Stored {
				t.Fatalf("results %+v, want the event stored", res)
			}
			got := map[string]string{}
			rows, _ := pool.Query(ctx, "SELECT subscription_id, id, status FROM webhook_deliveries WHERE event_id = $1", ev.ID)
			var sub, id, status string
			if _, err := pgx.ForEachRow(rows, []any{&sub, &id, &status}, func() error {
				if !isDerivedID(id, ev.ID, sub) {
					t.Errorf("delivery %s to %s: id not derived from the event and webhook", id, sub)
				}
				got[names[sub]] = status
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("deliveries %v, want %v", got, tc.want)
			}
			var gotLanes, wantLanes []string
			for _, l := range lanes {
				if l.AccountID != own {
					t.Errorf("lane %+v of another account", l)
				}
				gotLanes = append(gotLanes, names[l.SubscriptionID])
			}
			for name, status := range tc.want {
				if status == "pending" {
					wantLanes = append(wantLanes, name)
				}
			}
			slices.Sort(gotLanes)
			slices.Sort(wantLanes)
			if !slices.Equal(gotLanes, wantLanes) {
				t.Errorf("lanes %v, want the active matching webhooks %v", gotLanes, wantLanes)
			}
		})
	}
}

// TestWebhookJobMatches_FollowJobIDs: the matching table holds a row per
// job a webhook lists, through creation, changes of job_ids and deletion.
func TestWebhookJobMatches_FollowJobIDs(t *testing.T) {
	f, pool := newMatchFixture(t)
	ctx := t.Context()
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, []int64{3, 1, 2})
	jobs := func() []int64 {
		t.Helper()
		rows, _ := pool.Query(ctx, `SELECT job_id FROM webhook_job_matches WHERE subscription_id = $1 AND account_id = $2
			ORDER BY job_id`, sub.ID, f.account.ID)
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	steps := []struct {
		name   string
		change func() error
		want   []int64
	}{
		{"Created", func() error { return nil }, []int64{1, 2, 3}},
		{"JobIDsChanged", func() error {
			_, err := f.subs.Update(ctx, f.account.ID, sub.ID, webhooks.SubscriptionUpdate{JobIDs: &[]int64{2, 4}})
			return err
		}, []int64{2, 4}},
		{"OtherFieldChanged", func() error {
			name := "renamed"
			_, err := f.subs.Update(ctx, f.account.ID, sub.ID, webhooks.SubscriptionUpdate{Name: &name})
			return err
		}, []int64{2, 4}},
		{"AllJobs", func() error {
			_, err := f.subs.Update(ctx, f.account.ID, sub.ID, webhooks.SubscriptionUpdate{JobIDs: &[]int64{}})
			return err
		}, nil},
		{"JobsAgain", func() error {
			_, err := f.subs.Update(ctx, f.account.ID, sub.ID, webhooks.SubscriptionUpdate{JobIDs: &[]int64{9}})
			return err
		}, []int64{9}},
		{"DeletedForGood", func() error {
			_, err := pool.Exec(ctx, "DELETE FROM webhook_subscriptions WHERE id = $1", sub.ID)
			return err
		}, nil},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := jobs(); !slices.Equal(got, st.want) {
			t.Errorf("%s: jobs %v, want %v", st.name, got, st.want)
		}
	}
}

// matchWebhooks is how many webhooks, each for its own job, the plan test
// gives one account.
const matchWebhooks = 10_000

// TestIngestEvents_MatchingUsesIndexesAt10000Webhooks: with an account of
// 10,000 webhooks, each for its own job, IngestEvents finds an event's
// webhooks by index (the matching table's key, the all-jobs index, the
// webhooks' primary key), never by reading webhook_subscriptions or the
// matching table whole: with its own parameter values and with the generic
// plan a prepared statement switches to. Each plan is executed (EXPLAIN
// ANALYZE) in a transaction that is rolled back.
func TestIngestEvents_MatchingUsesIndexesAt10000Webhooks(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	log := &statementLog{}
	pool := db.TracedPool(t, log)
	ids := identity.NewStore(db.Pool)
	big, err := ids.CreateAccount(ctx, "many webhooks", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	small, err := ids.CreateAccount(ctx, "one webhook", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, big.ID, matchWebhooks, 0)
	loadWebhooks(t, db.Pool, small.ID, 1, 1)
	if _, err := db.Pool.Exec(ctx, "UPDATE webhook_subscriptions SET active = false WHERE id LIKE '%\\_7'; ANALYZE"); err != nil {
		t.Fatal(err)
	}

	// A group like the committers make: mostly one job of the big account,
	// other jobs, one that is not a number, and the small account.
	group := make([]deliveries.NewEvent, 100)
	for i := range group {
		ev := deliveries.NewEvent{ID: fmt.Sprintf("wev_plan%d", i), AccountID: big.ID, Type: webhooks.EventRunCompleted,
			JobID: "1", RunID: "1", ToolName: "dbt"}
		switch {
		case i%10 == 1:
			ev.JobID = fmt.Sprint(i*97%matchWebhooks + 1)
		case i == 2:
			ev.JobID = "not-a-number"
		case i == 4:
			ev.JobID = "7" // its webhook is inactive: a skipped delivery
		case i%10 == 3:
			ev.AccountID = small.ID
		}
		group[i] = ev
	}
	_, lanes, err := deliveries.NewStore(pool).IngestEvents(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) < 3 {
		t.Fatalf("lanes %+v, want several webhooks matched", lanes)
	}
	stmts := log.take()
	at := slices.IndexFunc(stmts, func(s loggedStatement) bool { return strings.Contains(s.SQL, "name: IngestEvents") })
	if at < 0 {
		t.Fatalf("statements %d, want IngestEvents among them", len(stmts))
	}
	st := stmts[at]
	// The same group with new event ids, so the plan inserts and matches.
	fresh := make([]string, len(group))
	for i := range fresh {
		fresh[i] = fmt.Sprintf("wev_explain%d", i)
	}
	args := slices.Clone(st.Args)
	args[0] = fresh

	// The generic plan as ingestion runs it (UseIngestionPlans), and a
	// custom plan.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			generic := mode == "force_generic_plan"
			var settings []string
			if generic {
				settings = []string{"enable_seqscan = off"}
			}
			plan := explainAnalyze(t, db.Pool, st.SQL, args, mode, settings...)
			if testing.Verbose() {
				t.Logf("%s:\n%s", mode, plan)
			}
			// A repeat is found by a probe of each events partition's key
			// per event, never by reading every stored event.
			if generic {
				probes := regexp.MustCompile(`Index Only Scan using webhook_events_\S+ .*loops=(\d+)\)`).FindAllStringSubmatch(plan, -1)
				if strings.Contains(plan, "Seq Scan on webhook_events") || len(probes) == 0 {
					t.Errorf("the plan looks for stored events other than by each partition's key:\n%s", plan)
				}
				for _, p := range probes {
					if p[1] != fmt.Sprint(len(group)) {
						t.Errorf("an events partition's key is read %s times, want once per event (%d):\n%s", p[1], len(group), plan)
					}
				}
			}
			for _, bad := range []string{"Seq Scan on webhook_subscriptions", "Seq Scan on webhook_job_matches",
				"Bitmap Heap Scan on webhook_job_matches"} {
				if strings.Contains(plan, bad) {
					t.Errorf("%s in the plan:\n%s", bad, plan)
				}
			}
			for _, index := range []string{"webhook_job_matches_pkey", "webhook_subscriptions_all_jobs_idx", "webhook_subscriptions_pkey"} {
				if !strings.Contains(plan, index) {
					t.Errorf("the plan does not use %s:\n%s", index, plan)
				}
			}
			// Each matching lookup is per event, so it reads a handful of
			// rows, never the account's 10,000. (A CTE scan's filter drops
			// the statement's own rows: routing's, for instance.)
			node := ""
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "->") {
					node = line
				}
				if strings.Contains(node, "CTE Scan") {
					continue
				}
				if strings.Contains(line, "Rows Removed by") && !strings.Contains(line, "Rows Removed by Filter: 0") {
					var removed int
					_, _ = fmt.Sscanf(strings.TrimSpace(line[strings.Index(line, ":")+1:]), "%d", &removed)
					if removed > len(group) {
						t.Errorf("a node read and dropped %d rows:\n%s", removed, plan)
					}
				}
			}
		})
	}
}

// TestIngestEvents_ReadsOnlyTheGroupsAccounts: among 5,000 accounts, an
// ingestion of an event of the newest (the highest id) reads that one
// account, under the generic plan the store runs it on, with routing's
// steps and without: never the accounts table from its start (a merge with
// the accounts' key read every account up to the group's highest id in
// every call). Each plan is executed (EXPLAIN ANALYZE) and rolled back.
func TestIngestEvents_ReadsOnlyTheGroupsAccounts(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO accounts (identifier, name, plan)
		SELECT 'many-' || g, 'many', 'team' FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	newest, err := identity.NewStore(db.Pool).CreateAccount(ctx, "newest", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, newest.ID, 1, 1)
	if _, err := db.Pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	accountReads := regexp.MustCompile(`on accounts \S+ \(actual rows=(\d+) loops=(\d+)\)`)
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprintf("Routed=%v", routed), func(t *testing.T) {
			log := &statementLog{}
			store := deliveries.NewStore(db.TracedPool(t, log))
			ev := deliveries.NewEvent{ID: fmt.Sprintf("wev_accounts_%v", routed), AccountID: newest.ID,
				Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1", ToolName: "dbt", Routed: routed}
			if _, _, err := store.IngestEvents(ctx, []deliveries.NewEvent{ev}); err != nil {
				t.Fatal(err)
			}
			stmts := log.take()
			at := slices.IndexFunc(stmts, func(s loggedStatement) bool { return strings.Contains(s.SQL, "name: IngestEvents") })
			if at < 0 {
				t.Fatalf("statements %d, want IngestEvents among them", len(stmts))
			}
			args := slices.Clone(stmts[at].Args)
			args[0] = []string{ev.ID + "_again"} // a new event, so the plan inserts
			plan := explainAnalyze(t, db.Pool, stmts[at].SQL, args, "force_generic_plan", "enable_seqscan = off", "jit = off")
			reads := accountReads.FindAllStringSubmatch(plan, -1)
			if len(reads) == 0 {
				t.Fatalf("the plan reads no accounts:\n%s", plan)
			}
			for _, r := range reads {
				if r[1] != "1" || r[2] != "1" {
					t.Errorf("accounts read: %s rows in %s loops, want the group's one account once:\n%s", r[1], r[2], plan)
				}
			}
		})
	}
}

// explainAnalyze runs sql with args under EXPLAIN ANALYZE, prepared under
// plan_cache_mode mode and settings ("name = value"), in a transaction it
// rolls back.
func explainAnalyze(t *testing.T, pool *pgxpool.Pool, sql string, args []any, mode string, settings ...string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = tx.Rollback(ctx)
		_, _ = conn.Exec(context.Background(), "DEALLOCATE match_plan")
	}()
	for _, setting := range append([]string{"plan_cache_mode = " + mode}, settings...) {
		if _, err := tx.Exec(ctx, "SET LOCAL "+setting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, "PREPARE match_plan AS "+sql); err != nil {
		t.Fatal(err)
	}
	// EXECUTE takes no statement parameters, so its arguments are literals.
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = arrayLiteral(t, a)
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE match_plan("+strings.Join(params, ", ")+")")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// arrayLiteral writes a statement's argument (an array, a number or a
// string) as a SQL literal.
func arrayLiteral(t *testing.T, a any) string {
	t.Helper()
	var elems []string
	switch v := a.(type) {
	case []string:
		for _, e := range v {
			elems = append(elems, "'"+strings.ReplaceAll(e, "'", "''")+"'")
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::text[]"
	case []int64:
		for _, e := range v {
			elems = append(elems, fmt.Sprint(e))
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::bigint[]"
	case [][]byte:
		for _, e := range v {
			elems = append(elems, fmt.Sprintf("'\\x%x'", e))
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::bytea[]"
	case []time.Time:
		for _, e := range v {
			elems = append(elems, "'"+e.Format(time.RFC3339Nano)+"'")
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::timestamptz[]"
	case []int32:
		for _, e := range v {
			elems = append(elems, fmt.Sprint(e))
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::int[]"
	case []bool:
		for _, e := range v {
			elems = append(elems, fmt.Sprint(e))
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::boolean[]"
	case []byte: // JSON
		return "'" + strings.ReplaceAll(string(v), "'", "''") + "'"
	case int64, int32:
		return fmt.Sprint(v)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	default:
		t.Fatalf("no literal for %T", a)
		return ""
	}
}
