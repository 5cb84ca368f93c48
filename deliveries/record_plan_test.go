package deliveries_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	stmts := log.take()
	at := slices.IndexFunc(stmts, func(s loggedStatement) bool { return strings.Contains(s.SQL, "name: RecordAttempts") })
	if at < 0 {
		t.Fatalf("statements %d, want RecordAttempts among them", len(stmts))
	}
	plan := explainAnalyze(t, db.Pool, stmts[at].SQL, stmts[at].Args, "force_generic_plan", "enable_seqscan = off", "jit = off")
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
}
