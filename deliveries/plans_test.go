package deliveries_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestIngestEvents_RunsItsGenericPlan checks that a connection plans each
// ingest statement (with routing's steps and without) once and then runs
// that plan (its planning costs more than its work), however many groups
// it stores: on one connection, pg_prepared_statements counts its generic
// and custom plans.
func TestIngestEvents_RunsItsGenericPlan(t *testing.T) {
	for _, tc := range []struct {
		statement string
		routed    bool
	}{{"IngestEventsWithoutRouting", false}, {"IngestEvents", true}} {
		t.Run(tc.statement, func(t *testing.T) {
			db := testenv.NewDatabase(t)
			ctx := t.Context()
			a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "plans", webhooks.PlanTeam)
			if err != nil {
				t.Fatal(err)
			}
			loadWebhooks(t, db.Pool, a.ID, 0, 3)
			pool := db.OneConnectionPool(t)

			const groups = 8 // PostgreSQL's own choice tries custom plans for the first five
			store := deliveries.NewStore(pool)
			for g := range groups {
				evs := make([]deliveries.NewEvent, g+1) // groups of every size: each custom plan would differ
				for i := range evs {
					evs[i] = deliveries.NewEvent{ID: fmt.Sprintf("wev_plans%d_%d", g, i), AccountID: a.ID, Routed: tc.routed,
						Type: webhooks.EventRunCompleted, JobID: "1", RunID: fmt.Sprint(i), ToolName: "dbt"}
				}
				if _, lanes, err := store.IngestEvents(ctx, evs); err != nil || len(lanes) != 3 {
					t.Fatalf("group %d: lanes %d, err %v; want the 3 webhooks", g, len(lanes), err)
				}
			}
			rows, err := pool.Query(ctx, `SELECT substring(statement FROM 'name: (\w+)'), generic_plans, custom_plans
				FROM pg_prepared_statements WHERE statement LIKE '-- name: IngestEvents%'`)
			if err != nil {
				t.Fatal(err)
			}
			var name string
			var generic, custom int64
			prepared := 0
			if _, err := pgx.ForEachRow(rows, []any{&name, &generic, &custom}, func() error {
				prepared++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if prepared != 1 || name != tc.statement {
				t.Fatalf("prepared %d ingest statements, the last %q; want only %s", prepared, name, tc.statement)
			}
			if custom != 0 || generic != groups {
				t.Errorf("%s ran %d generic and %d custom plans; want %d generic, no custom", name, generic, custom, groups)
			}
		})
	}
}

// TestClaimShared_RunsItsGenericPlan checks the same of the shared claim,
// whose plan is made when the connection first claims, often while the
// table is nearly empty: it is kept, and every claim after runs it.
func TestClaimShared_RunsItsGenericPlan(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "claims", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, a.ID, 0, 2)
	pool := db.OneConnectionPool(t)

	store := deliveries.NewStore(pool)
	claim := func(limit int) deliveries.ClaimedPage { return claimWholeShard(t, store, limit) }
	const claims = 8
	if page := claim(10); len(page.Claimed) != 0 {
		t.Fatalf("claimed %d from an empty table", len(page.Claimed))
	}
	for i := range 40 { // 20 events, each to both webhooks
		evs := []deliveries.NewEvent{{ID: fmt.Sprintf("wev_claims%d", i), AccountID: a.ID, Type: webhooks.EventRunCompleted,
			JobID: "1", RunID: fmt.Sprint(i), ToolName: "dbt"}}
		if _, _, err := store.IngestEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for range claims - 1 {
		got += len(claim(4).Claimed)
	}
	if got != 4*(claims-1) {
		t.Errorf("claimed %d in %d claims of 4; want %d", got, claims-1, 4*(claims-1))
	}
	var generic, custom int64
	if err := pool.QueryRow(ctx, `SELECT sum(generic_plans), sum(custom_plans) FROM pg_prepared_statements
		WHERE statement LIKE '%name: ClaimShared%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if custom != 0 || generic < claims {
		t.Errorf("ClaimShared ran %d generic and %d custom plans; want %d or more generic, no custom", generic, custom, claims)
	}
}

// TestRecordAttempts_RunsItsGenericPlan checks the same of the record
// statement, which PostgreSQL planned for every group on the topology bench
// (about 4 ms of planning a group, as much as its work).
func TestRecordAttempts_RunsItsGenericPlan(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "records", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, a.ID, 0, 2)
	pool := db.OneConnectionPool(t)

	store := deliveries.NewStore(pool)
	for i := range 20 { // 20 events, each to both webhooks
		evs := []deliveries.NewEvent{{ID: fmt.Sprintf("wev_records%d", i), AccountID: a.ID, Type: webhooks.EventRunCompleted,
			JobID: "1", RunID: fmt.Sprint(i), ToolName: "dbt"}}
		if _, _, err := store.IngestEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	page, err := store.ClaimShared(ctx, deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 40,
		Limit: 40, Lease: time.Minute, WorkflowID: "shard-0", WorkflowRunID: "run"})
	if err != nil || len(page.Claimed) != 40 {
		t.Fatalf("claimed %d, err %v; want all 40", len(page.Claimed), err)
	}
	const groups = 8
	rest := page.Claimed
	for g := range groups { // groups of every size: each custom plan would differ
		recs := make([]deliveries.AttemptRecord, g+1)
		for i, c := range rest[:g+1] {
			recs[i] = deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: c.Webhook.ID, AttemptNumber: c.Attempt,
				StartedAt: time.Now(), Duration: time.Millisecond, StatusCode: 200, Status: deliveries.StatusSucceeded, Body: deliveries.FixedBody{Payload: []byte(`{}`)}}
		}
		rest = rest[g+1:]
		if _, err := store.RecordAttempts(ctx, recs, deliveries.RecordPolicy{}); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int64
	if err := pool.QueryRow(ctx, `SELECT sum(generic_plans), sum(custom_plans) FROM pg_prepared_statements
		WHERE statement LIKE '%name: RecordAttempts%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if custom != 0 || generic < groups {
		t.Errorf("RecordAttempts ran %d generic and %d custom plans; want %d or more generic, no custom", generic, custom, groups)
	}
}

// TestClaimShared_ItsPlanReadsThePageByKey: the claim's generic plan is
// made at a connection's first claim, often on a nearly empty table, and
// kept until the next ANALYZE. Made so, it once found the page's rows by
// scanning every due delivery of the shard (15,000 index entries a claim
// on a 25,000-delivery backlog, a claim's cost growing with the backlog).
// Here the plan is made on an empty table, then 3,000 deliveries of one
// webhook become due: a claim of 4 reads its candidates (PerKey) and the
// page's rows by primary key, a few hundred index entries at most.
func TestClaimShared_ItsPlanReadsThePageByKey(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "backlog", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, a.ID, 0, 1)
	pool := db.OneConnectionPool(t)
	store := deliveries.NewStore(pool)
	claim := func() int { return len(claimWholeShard(t, store, 4).Claimed) }
	if n := claim(); n != 0 { // the plan is made now, on an empty table
		t.Fatalf("claimed %d from an empty table", n)
	}
	const backlog = 3000
	ingestBacklog(t, store, a.ID, backlog)
	before := deliveryIndexUse(t, pool)
	if n := claim(); n != 4 {
		t.Fatalf("claimed %d, want 4", n)
	}
	if read := deliveryIndexUse(t, pool).minus(before).reads; read > 300 {
		t.Errorf("a claim of 4 read %d index entries of webhook_deliveries with %d due; want at most 300 (candidates and keys)", read, backlog)
	}
}

// TestClaimShared_ABacklogCostsAFewPages: a claim of a page with the
// production windows (200 a key, 16 a webhook) reads a few pages of
// candidates whatever the backlog's shape. With deliveries due on every
// lane key (20,000 over 1,000 webhooks) it must not read the first 200 of
// every key: a backlog must not make each claim dearer, or a worker that
// falls behind never catches up (the soak stalled so, its claims taking
// seconds). With one busy webhook it must not probe every key twice: one
// index scan a key, and the busy key's window read again.
func TestClaimShared_ABacklogCostsAFewPages(t *testing.T) {
	const page = 200
	for _, tc := range []struct {
		name           string
		hooks, events  int
		maxReads       int64 // index entries of webhook_deliveries read
		maxScans       int64 // index scans of webhook_deliveries
		claimedAtLeast int
	}{
		// A first window of 3 a key (768), about four pages of candidates
		// and as many beside them, and the page's own reads (the first 200
		// of every key: 20,400).
		{name: "every key", hooks: 1000, events: 20, maxReads: 8000, maxScans: 2000, claimedAtLeast: page},
		// A scan a key (256), the busy key's 200 read again, the page's.
		{name: "one webhook", hooks: 1, events: 1000, maxReads: 1000, maxScans: 300, claimedAtLeast: 16},
		// A few due on most keys (Zipf's tail): a scan a key, not a probe
		// a key and then a window (797 scans so), the keys with more than
		// the first window's read again, the page's own lookups (707).
		{name: "a few on most keys", hooks: 200, events: 2, maxReads: 2000, maxScans: 760, claimedAtLeast: page},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := testenv.NewDatabase(t)
			ctx := t.Context()
			a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "backlog", webhooks.PlanTeam)
			if err != nil {
				t.Fatal(err)
			}
			loadWebhooks(t, db.Pool, a.ID, 0, tc.hooks)
			pool := db.OneConnectionPool(t) // the claim's index reads are this backend's, flushed before each count
			store := deliveries.NewStore(pool)
			ingestBacklog(t, store, a.ID, tc.events)
			before := deliveryIndexUse(t, pool)
			start := time.Now()
			claimed, err := store.ClaimShared(ctx, deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: page, PerWebhook: 16,
				Limit: page, Lease: time.Minute, WorkflowID: "shard-0", WorkflowRunID: "run"})
			if err != nil {
				t.Fatal(err)
			}
			used := deliveryIndexUse(t, pool).minus(before)
			t.Logf("the claim took %v, %d index scans, %d entries read", time.Since(start), used.scans, used.reads)
			if n := len(claimed.Claimed); n < tc.claimedAtLeast {
				t.Fatalf("claimed %d, want at least %d", n, tc.claimedAtLeast)
			}
			if used.reads > tc.maxReads || used.scans > tc.maxScans {
				t.Errorf("a claim of %d with %d due over %d webhooks: %d index scans and %d entries of webhook_deliveries; want at most %d and %d",
					page, tc.hooks*tc.events, tc.hooks, used.scans, used.reads, tc.maxScans, tc.maxReads)
			}
		})
	}
}

// ingestBacklog ingests n job.run.completed events of job 1 for the
// account, 500 a statement.
func ingestBacklog(t *testing.T, store *deliveries.Store, accountID int64, n int) {
	t.Helper()
	for g := 0; g < n; g += 500 {
		evs := make([]deliveries.NewEvent, min(500, n-g))
		for i := range evs {
			evs[i] = deliveries.NewEvent{ID: fmt.Sprintf("wev_backlog%d", g+i), AccountID: accountID, Type: webhooks.EventRunCompleted,
				JobID: "1", ToolName: "dbt"}
		}
		if _, _, err := store.IngestEvents(t.Context(), evs); err != nil {
			t.Fatal(err)
		}
	}
}

// indexUse counts the index scans of a table and the entries they read.
type indexUse struct{ scans, reads int64 }

func (u indexUse) minus(v indexUse) indexUse { return indexUse{u.scans - v.scans, u.reads - v.reads} }

// deliveryIndexUse is how many index scans of webhook_deliveries the
// database's statements have made so far and how many entries they read
// (this backend's counts flushed first).
func deliveryIndexUse(t *testing.T, pool *pgxpool.Pool) indexUse {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var u indexUse
	if err := pool.QueryRow(t.Context(), `SELECT COALESCE(sum(idx_scan), 0)::bigint, COALESCE(sum(idx_tup_read), 0)::bigint
		FROM pg_stat_user_indexes WHERE relname = 'webhook_deliveries'`).Scan(&u.scans, &u.reads); err != nil {
		t.Fatal(err)
	}
	return u
}

// claimWholeShard claims at most limit deliveries of the one shard, 50
// candidates a lane key, 16 a webhook.
func claimWholeShard(t *testing.T, store *deliveries.Store, limit int) deliveries.ClaimedPage {
	t.Helper()
	page, err := store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		Limit: limit, Lease: time.Minute, WorkflowID: "shard-0", WorkflowRunID: "run"})
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestClaimShared_SaysHowLongItWaitedForAConnection: a claim on a busy
// pool waits for a connection before its statement is sent, and its page
// says how long (ConnectionWait): the round's leases and the webhook
// states the claim read start no earlier than that after its call.
func TestClaimShared_SaysHowLongItWaitedForAConnection(t *testing.T) {
	pool := testenv.NewDatabase(t).OneConnectionPool(t)
	store := deliveries.NewStore(pool)
	idle := claimWholeShard(t, store, 10).ConnectionWait
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const held = 400 * time.Millisecond
	go func() {
		time.Sleep(held)
		conn.Release()
	}()
	if busy := claimWholeShard(t, store, 10).ConnectionWait; busy < held/2 || busy <= idle {
		t.Errorf("a claim waited %v for the pool's one connection, held for %v (on the idle pool: %v)", busy, held, idle)
	}
}
