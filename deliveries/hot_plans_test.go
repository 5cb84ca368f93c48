package deliveries_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// recordPlanWebhooks is how many webhooks, each with delivery settings, the
// record's plan test loads.
const recordPlanWebhooks = 20_000

// TestRecordAttempts_ReadsOnlyTheGroupsWebhooks: among 20,000 webhooks
// with delivery settings, a record of one outcome for the webhook with the
// highest id reads that webhook's row and its settings' once each, under
// the generic plan the store runs it on: never a key read from its start
// (a merge with a whole table's key costs every call the table's size).
// The plan is executed (EXPLAIN ANALYZE) and rolled back.
func TestRecordAttempts_ReadsOnlyTheGroupsWebhooks(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	account, err := identity.NewStore(db.Pool).CreateAccount(ctx, "many webhooks", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, account.ID, recordPlanWebhooks, 0)
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO webhook_delivery_settings (subscription_id, account_id, created_at, updated_at)
		SELECT id, account_id, now(), now() FROM webhook_subscriptions;
		ANALYZE`); err != nil {
		t.Fatal(err)
	}
	var last string
	if err := db.Pool.QueryRow(ctx, "SELECT max(id) FROM webhook_subscriptions").Scan(&last); err != nil {
		t.Fatal(err)
	}

	log := &statementLog{}
	store := deliveries.NewStore(db.TracedPool(t, log))
	rec := deliveries.AttemptRecord{DeliveryID: "wdl_00000000000000000000000001", SubscriptionID: last, AttemptNumber: 1,
		StartedAt: time.Now(), Duration: 30 * time.Millisecond, StatusCode: 500, ErrorKind: "status",
		ErrorMessage: "500 Internal Server Error", Status: "retrying", RetryIn: time.Minute}
	if _, err := store.RecordAttempts(ctx, []deliveries.AttemptRecord{rec}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	plan := genericPlan(t, db.Pool, log.take(), "RecordAttempts")
	reads := regexp.MustCompile(`on (webhook_subscriptions|webhook_delivery_settings) \S+ \(actual rows=(\d+) loops=(\d+)\)`).
		FindAllStringSubmatch(plan, -1)
	seen := map[string]bool{}
	for _, r := range reads {
		rows, _ := strconv.Atoi(r[2])
		loops, _ := strconv.Atoi(r[3])
		seen[r[1]] = true
		if rows*loops > 1 {
			t.Errorf("%s read: %d rows in %d loops, want the group's one webhook:\n%s", r[1], rows, loops, plan)
		}
	}
	for _, table := range []string{"webhook_subscriptions", "webhook_delivery_settings"} {
		if !seen[table] {
			t.Errorf("the plan reads no %s:\n%s", table, plan)
		}
	}
	// Its records, in partitions all empty when the plan was made.
	partitionScansByKey(t, plan, "webhook_deliveries", "id = ")
}

// TestClaimShared_ReadsEventsByKey: a shared claim reads its deliveries'
// events by key in every events partition, under the generic plan the
// store runs it on, made here while every partition is empty, as the
// current one is when it begins: never a partition's whole key for each
// claimed delivery (the join's plan before), which a plan made at a
// partition's start kept while the partition filled.
func TestClaimShared_ReadsEventsByKey(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.ingest(t, id, 3)
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	claim := deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16, PerDestination: 16,
		Limit: 50, Lease: time.Minute, WorkflowID: "shard"}
	if _, err := store.ClaimShared(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	plan := genericPlan(t, f.pool, log.take(), "ClaimShared")
	partitionScansByKey(t, plan, "webhook_events", "id = ANY")
}

// partitionScansByKey checks that every scan of table's partitions in plan
// finds its rows by the key (an index or bitmap condition holding cond's
// text), and that there is at least one: a plan made while a
// partition was empty may otherwise read the partition whole for each row
// it looks up, and keep doing so as the partition fills.
func partitionScansByKey(t *testing.T, plan, table, cond string) {
	t.Helper()
	lines := strings.Split(plan, "\n")
	scan := regexp.MustCompile(`Scan .*on ` + table + `_\S+`)
	scans := 0
	for i, line := range lines {
		if !scan.MatchString(line) {
			continue
		}
		scans++
		byKey := false
		for _, detail := range lines[i+1:] {
			if strings.Contains(detail, "->") && !strings.Contains(detail, "Bitmap Index Scan") {
				break
			}
			byKey = byKey || strings.Contains(detail, "Cond: (") && strings.Contains(detail, cond)
		}
		if !byKey {
			t.Errorf("a partition of %s read other than by %q: %q\n%s", table, cond, strings.TrimSpace(line), plan)
		}
	}
	if scans == 0 {
		t.Errorf("the plan reads no partition of %s:\n%s", table, plan)
	}
}

// TestClaimDue_ReadsRecordsAndEventsByKey: a lane's claim reads its
// deliveries' records and events by key in every partition under a generic
// plan made while the partitions are empty, which PostgreSQL may switch the
// prepared statement to once it has run often.
func TestClaimDue_ReadsRecordsAndEventsByKey(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.ingest(t, id, 3)
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	if _, err := store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: id, Limit: 50, Lease: time.Minute,
		WorkflowID: "lane"}); err != nil {
		t.Fatal(err)
	}
	plan := genericPlan(t, f.pool, log.take(), "ClaimDueDeliveries")
	partitionScansByKey(t, plan, "webhook_deliveries", "id = ANY")
	partitionScansByKey(t, plan, "webhook_events", "id = ANY")
}

// TestFixBodies_ReadsRecordsAndEventsByKey: fixing the bodies of an
// ingestion's skipped deliveries reads their records and events, and
// writes the records, by key in every partition, under a generic plan made
// while the partitions are empty (the statements run often wherever
// webhooks are inactive, and PostgreSQL may then keep a generic plan).
func TestFixBodies_ReadsRecordsAndEventsByKey(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.subs.Create(t.Context(), webhooks.Subscription{AccountID: f.account.ID, Name: "off",
		ClientURL: "https://example.com/hook", EventTypes: []string{webhooks.EventRunCompleted}, Active: false}); err != nil {
		t.Fatal(err)
	}
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	if _, _, err := store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_skipped_body", "1")}); err != nil {
		t.Fatal(err)
	}
	stmts := log.take()
	for _, tc := range []struct {
		statement string
		tables    []string
	}{
		{"DeliveriesToBuild", []string{"webhook_deliveries", "webhook_events"}},
		{"SetPayloads", []string{"webhook_deliveries"}},
	} {
		plan := genericPlan(t, f.pool, stmts, tc.statement)
		for _, table := range tc.tables {
			partitionScansByKey(t, plan, table, "id = ANY")
		}
	}
}

// TestFeedPage_ReadsEventsByKey: a feed page reads the events of its
// deliveries without a body by key in every partition, under a generic
// plan made while the partitions are empty (receivers poll the feed, and
// PostgreSQL may then keep a generic plan).
func TestFeedPage_ReadsEventsByKey(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.ingest(t, id, 3)
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	w, err := store.FeedWebhook(t.Context(), f.account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.FeedPage(t.Context(), w, 0, 10); err != nil {
		t.Fatal(err)
	}
	plan := genericPlan(t, f.pool, log.take(), "FeedPage")
	partitionScansByKey(t, plan, "webhook_events", "id = ANY")
}

// TestRecordedAttempts_ReturnsTheRecordedOutcomes: the outcomes of attempts
// handed over by a round are read back as recorded (an attempt not
// recorded yet has none), and read by key in every partition under a
// generic plan made while the partitions are empty.
func TestRecordedAttempts_ReturnsTheRecordedOutcomes(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.ingest(t, id, 2)
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		PerDestination: 16, Limit: 50, Lease: time.Minute, WorkflowID: "shard"})
	if err != nil || len(page.Claimed) != 2 {
		t.Fatalf("claimed %+v (err %v), want both deliveries", page.Claimed, err)
	}
	done, open := page.Claimed[0], page.Claimed[1]
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: done.ID, SubscriptionID: id,
		AttemptNumber: done.Attempt, StartedAt: time.Now(), Duration: 40 * time.Millisecond, StatusCode: 500, ErrorKind: "status",
		ErrorMessage: "500", Status: deliveries.StatusRetrying, RetryIn: time.Minute, LeasedUntil: done.LeasedUntil}},
		deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	got, err := store.RecordedAttempts(t.Context(), []deliveries.AttemptRef{
		{DeliveryID: done.ID, Attempt: done.Attempt}, {DeliveryID: open.ID, Attempt: open.Attempt}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DeliveryID != done.ID || got[0].StatusCode != 500 || got[0].ErrorKind != "status" ||
		got[0].DeliveryStatus != deliveries.StatusRetrying || got[0].RetryIn != time.Minute || got[0].Duration != 40*time.Millisecond {
		t.Fatalf("recorded attempts %+v, want the one recorded: 500, retrying in a minute", got)
	}
	plan := genericPlan(t, f.pool, log.take(), "AttemptOutcomes")
	partitionScansByKey(t, plan, "webhook_deliveries", "id = ANY")
	partitionScansByKey(t, plan, "webhook_delivery_attempts", "delivery_id = ANY")
}

// TestDeliveryAndProbe_ReadEventsByKey: reading one delivery (the API's
// GET) and taking a held webhook's probe read the event, and the probe its
// record, by key in every partition under a generic plan made while the
// partitions are empty.
func TestDeliveryAndProbe_ReadEventsByKey(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.ingest(t, id, 1)
	var delivery string
	if err := f.pool.QueryRow(t.Context(), "SELECT id FROM webhook_deliveries WHERE subscription_id = $1", id).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	log := &statementLog{}
	store := deliveries.NewStore(f.db.TracedPool(t, log))
	if _, err := store.Delivery(t.Context(), f.account.ID, id, delivery); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ClaimProbe(t.Context(), deliveries.Claim{SubscriptionID: id, Limit: 1, Lease: time.Minute,
		WorkflowID: "lane"}); err != nil {
		t.Fatal(err)
	}
	stmts := log.take()
	for _, tc := range []struct {
		statement string
		tables    []string
	}{
		{"GetDelivery", []string{"webhook_events"}},
		{"ClaimProbe", []string{"webhook_deliveries", "webhook_events"}},
	} {
		plan := genericPlan(t, f.pool, stmts, tc.statement)
		for _, table := range tc.tables {
			partitionScansByKey(t, plan, table, "id = ANY")
		}
	}
}

// genericPlan is the plan, executed (EXPLAIN ANALYZE, rolled back), of the
// logged statement named name (its sqlc name, or the start of it) on a
// generic plan made now with the store's settings (withGenericIndexPlans).
func genericPlan(t *testing.T, pool *pgxpool.Pool, stmts []loggedStatement, name string) string {
	t.Helper()
	at := slices.IndexFunc(stmts, func(s loggedStatement) bool { return strings.Contains(s.SQL, "name: "+name) })
	if at < 0 {
		t.Fatalf("statements %d, want %s among them", len(stmts), name)
	}
	return explainAnalyze(t, pool, stmts[at].SQL, stmts[at].Args, "force_generic_plan", "enable_seqscan = off", "jit = off")
}
