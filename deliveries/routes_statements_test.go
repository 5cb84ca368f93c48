package deliveries_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// routeFixture is a fixture whose webhooks each listen to a job of their
// own, so one webhook's events reach no other.
type routeFixture struct {
	*fixture
	jobs   map[string]string // webhook id -> its job
	events int
}

func newRouteFixture(t *testing.T) *routeFixture {
	t.Helper()
	return &routeFixture{fixture: newFixture(t), jobs: map[string]string{}}
}

func (f *routeFixture) webhook(t *testing.T) string {
	t.Helper()
	job := int64(len(f.jobs) + 1)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, []int64{job})
	f.jobs[sub.ID] = strconv.FormatInt(job, 10)
	return sub.ID
}

// ingest gives a webhook n new pending deliveries.
func (f *routeFixture) ingest(t *testing.T, id string, n int) {
	t.Helper()
	events := make([]deliveries.NewEvent, n)
	for i := range events {
		f.events++
		events[i] = f.event(fmt.Sprintf("wev_route_%d", f.events), f.jobs[id])
	}
	if _, _, err := f.store.IngestEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
}

func (f *routeFixture) route(t *testing.T, id string) string {
	t.Helper()
	r, err := f.store.Route(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Route
}

// settings gives a webhook delivery settings: on_outage ("" the default)
// and a rate limit (0: none).
func (f *routeFixture) settings(t *testing.T, id, onOutage string, rate float64) {
	t.Helper()
	var mode *string
	if onOutage != "" {
		mode = &onOutage
	}
	var limit *float64
	if rate > 0 {
		limit = &rate
	}
	if _, err := f.pool.Exec(t.Context(), `
		INSERT INTO webhook_delivery_settings (subscription_id, account_id, on_outage, max_requests_per_second, created_at, updated_at)
		VALUES ($1, $2, $3, $4, now(), now())
		ON CONFLICT (subscription_id) DO UPDATE SET on_outage = EXCLUDED.on_outage,
			max_requests_per_second = EXCLUDED.max_requests_per_second`, id, f.account.ID, mode, limit); err != nil {
		t.Fatal(err)
	}
}

func (f *routeFixture) setRoute(t *testing.T, id, from, to string) {
	t.Helper()
	moved, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{id}, From: []string{from}, To: to, Reason: "test"})
	if err != nil || len(moved) != 1 {
		t.Fatalf("%s -> %s: moved %d (err %v)", from, to, len(moved), err)
	}
}

// breakerPolicy opens the breaker at the first outage failure; webhooks
// without settings retry during an outage.
var breakerPolicy = deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 1, ProbeFirst: time.Minute,
	ProbeMax: time.Minute, OnOutage: deliveries.OnOutageRetry}}

// attempt claims one of the webhook's deliveries (its probe when it is
// held) and records code for it (a 503 an outage failure, a 200 an answer).
func (f *routeFixture) attempt(t *testing.T, id string, code int, policy deliveries.RecordPolicy) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_attempt_at = now(), leased_until = NULL
		WHERE subscription_id = $1 AND next_attempt_at IS NOT NULL`, id); err != nil {
		t.Fatal(err)
	}
	held := f.route(t, id) == deliveries.RouteHeld
	claim := deliveries.Claim{SubscriptionID: id, Limit: 1, Lease: time.Minute, WorkflowID: "webhook/" + id}
	claimed, err := f.store.ClaimDue(t.Context(), claim)
	if held {
		claimed, err = f.store.ClaimProbe(t.Context(), claim)
	}
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d (err %v), want 1", len(claimed), err)
	}
	rec := failing(id, claimed, code)
	rec[0].Probe = held
	if code < 300 {
		rec[0].ErrorKind, rec[0].Status = "", deliveries.StatusSucceeded
	}
	if _, err := f.store.RecordAttempts(t.Context(), rec, policy); err != nil {
		t.Fatal(err)
	}
}

// migrate runs a migration's Up statements again.
func (f *routeFixture) migrate(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "db", "migrations", file))
	if err != nil {
		t.Fatal(err)
	}
	up, _, ok := strings.Cut(string(raw), "-- +goose Down")
	if !ok || !strings.Contains(up, "-- +goose Up") {
		t.Fatalf("%s: no Up and Down sections", file)
	}
	if _, err := f.pool.Exec(t.Context(), up); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestRoutes_StatementsMakeOnlyTableTransitions runs each path of the
// statements that change a webhook's route themselves (RecordAttempts'
// plan, DisableByReceiver, ResetBreaker, migrations): each change must be a
// transition of the table (deliveries/routes.go), so the table stays the
// truth about routes.
func TestRoutes_StatementsMakeOnlyTableTransitions(t *testing.T) {
	f := newRouteFixture(t)
	hold := func(t *testing.T, id string) { // a held webhook: its breaker opened on "hold"
		f.settings(t, id, deliveries.OnOutageHold, 0)
		f.attempt(t, id, 503, breakerPolicy)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, id string)
		run   func(t *testing.T, id string)
		want  string
	}{
		{"BreakerOpensOnRetry", nil,
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteShared},
		{"BreakerOpensOnRetryInItsOwnLane",
			func(t *testing.T, id string) { f.setRoute(t, id, deliveries.RouteShared, deliveries.RouteOwn) },
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteOwn},
		{"BreakerOpensOnHold",
			func(t *testing.T, id string) { f.settings(t, id, deliveries.OnOutageHold, 0) },
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteHeld},
		{"BreakerOpensOnHoldInItsOwnLane",
			func(t *testing.T, id string) {
				f.settings(t, id, deliveries.OnOutageHold, 0)
				f.setRoute(t, id, deliveries.RouteShared, deliveries.RouteOwn)
			},
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteHeld},
		{"HoldChosenWhileOpen",
			func(t *testing.T, id string) {
				f.attempt(t, id, 503, breakerPolicy) // opened on retry: still shared
				f.settings(t, id, deliveries.OnOutageHold, 0)
			},
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteHeld},
		{"RetryChosenWhileOpen",
			func(t *testing.T, id string) {
				hold(t, id)
				f.settings(t, id, deliveries.OnOutageRetry, 0)
			},
			func(t *testing.T, id string) { f.attempt(t, id, 503, breakerPolicy) }, deliveries.RouteOwn},
		{"ProbeAnswered", hold,
			func(t *testing.T, id string) { f.attempt(t, id, 200, breakerPolicy) }, deliveries.RouteOwn},
		{"AutoDisabledWhileHeld",
			func(t *testing.T, id string) {
				hold(t, id)
				if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET breaker_opened_at = now() - interval '2 hours' WHERE id = $1`, id); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, id string) {
				policy := breakerPolicy
				policy.AutoDisable = deliveries.AutoDisable{After: time.Hour, MinFailures: 1}
				f.attempt(t, id, 503, policy)
			}, deliveries.RouteOwn},
		{"ReceiverDisablesWhileHeld", hold,
			func(t *testing.T, id string) {
				target, err := f.store.LoadTarget(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				rec := deliveries.AttemptRecord{SubscriptionID: id, ClientURL: target.ClientURL, SecretVersion: target.SecretVersion}
				if _, ok, err := f.store.DisableByReceiver(t.Context(), rec, "asked"); err != nil || !ok {
					t.Fatalf("disabled %v (err %v)", ok, err)
				}
			}, deliveries.RouteOwn},
		{"ResetWhileHeld", hold,
			func(t *testing.T, id string) {
				if err := f.store.ResetBreaker(t.Context(), id); err != nil {
					t.Fatal(err)
				}
			}, deliveries.RouteShared},
		{"ResetWhileHeldWithARateLimit",
			func(t *testing.T, id string) {
				hold(t, id)
				f.settings(t, id, deliveries.OnOutageHold, 5)
			},
			func(t *testing.T, id string) {
				if err := f.store.ResetBreaker(t.Context(), id); err != nil {
					t.Fatal(err)
				}
			}, deliveries.RouteOwn},
		{"MigrationMovesRateLimitedWebhooks",
			func(t *testing.T, id string) { f.settings(t, id, "", 5) },
			func(t *testing.T, id string) { f.migrate(t, "00023_rate_limited_routes.sql") }, deliveries.RouteOwn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := f.webhook(t)
			f.ingest(t, id, 3)
			if tt.setup != nil {
				tt.setup(t, id)
			}
			before := f.route(t, id)
			tt.run(t, id)
			after := f.route(t, id)
			if after != tt.want {
				t.Fatalf("route %s -> %s, want %s", before, after, tt.want)
			}
			if before != after && len(deliveries.Allowed(before, after)) == 0 {
				t.Errorf("the statement moved the webhook %s -> %s: not a transition of deliveries.Transitions", before, after)
			}
		})
	}
}

// TestSetRoute_KeepsRateLimitedWebhooksOffTheSharedRoute: a move into
// 'shared' (the idle lane's return, a resume) leaves a webhook with a rate
// limit where it is; without the limit, it moves.
func TestSetRoute_KeepsRateLimitedWebhooksOffTheSharedRoute(t *testing.T) {
	f := newRouteFixture(t)
	idle, paused := f.webhook(t), f.webhook(t)
	f.setRoute(t, idle, deliveries.RouteShared, deliveries.RouteOwn)
	f.setRoute(t, paused, deliveries.RouteShared, deliveries.RoutePaused)
	f.ingest(t, idle, 2)
	for _, id := range []string{idle, paused} {
		f.settings(t, id, "", 5)
	}
	toShared := func(id, from string) []deliveries.Moved {
		t.Helper()
		moved, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{id}, From: []string{from},
			To: deliveries.RouteShared, Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return moved
	}
	if moved := toShared(idle, deliveries.RouteOwn); len(moved) != 0 || f.route(t, idle) != deliveries.RouteOwn {
		t.Errorf("idle return with a rate limit: moved %v, route %s; want it kept on its own lane", moved, f.route(t, idle))
	}
	if moved := toShared(paused, deliveries.RoutePaused); len(moved) != 0 || f.route(t, paused) != deliveries.RoutePaused {
		t.Errorf("resume to shared with a rate limit: moved %v, route %s; want it kept paused (the resume goes own)", moved, f.route(t, paused))
	}
	f.settings(t, idle, "", 0) // the limit removed
	if moved := toShared(idle, deliveries.RouteOwn); len(moved) != 1 || !moved[0].HasPending || f.route(t, idle) != deliveries.RouteShared {
		t.Errorf("idle return without a rate limit: moved %v, route %s; want shared, with its deliveries", moved, f.route(t, idle))
	}
	var onShared int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND route = 'shared'`, idle).Scan(&onShared); err != nil || onShared != 2 {
		t.Errorf("%d deliveries moved with it (err %v), want 2", onShared, err)
	}
}

// TestSetRoute_SeesARateLimitSetWhileItWaits: a settings write that sets a
// rate limit on a webhook already on its own lane (it has nothing to move)
// still locks the webhook, so an idle return that runs meanwhile waits for
// it and then sees the limit: the webhook never ends up shared with a
// limit.
func TestSetRoute_SeesARateLimitSetWhileItWaits(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	f.setRoute(t, id, deliveries.RouteShared, deliveries.RouteOwn)

	tx, err := f.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), `INSERT INTO webhook_delivery_settings (subscription_id, account_id, max_requests_per_second, created_at, updated_at)
		VALUES ($1, $2, 5, now(), now())`, id, f.account.ID); err != nil {
		t.Fatal(err)
	}
	if moved, err := deliveries.SetRouteIn(t.Context(), tx, deliveries.RouteChange{IDs: []string{id},
		From: []string{deliveries.RouteShared}, To: deliveries.RouteOwn, Reason: "rate limit"}); err != nil || len(moved) != 0 {
		t.Fatalf("settings write: moved %v (err %v), want nothing (already own)", moved, err)
	}

	type result struct {
		moved []deliveries.Moved
		err   error
	}
	done := make(chan result, 1)
	go func() {
		moved, err := f.store.SetRoute(context.Background(), deliveries.RouteChange{IDs: []string{id},
			From: []string{deliveries.RouteOwn}, To: deliveries.RouteShared, Reason: "idle"})
		done <- result{moved, err}
	}()
	waitForALockWait(t, f)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.moved) != 0 || f.route(t, id) != deliveries.RouteOwn {
		t.Errorf("idle return during the settings write: moved %v (err %v), route %s; want own", r.moved, r.err, f.route(t, id))
	}
}

// waitForALockWait waits until a statement on the fixture's database waits
// for a lock.
func waitForALockWait(t *testing.T, f *routeFixture) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
	}
	t.Fatal("no statement waited for the webhook's lock")
}

// TestClaimShared_NeverTakesARateLimitedWebhooksDeliveries: once a webhook
// has a rate limit (the settings write routes it 'own'), a shared claim
// takes none of its deliveries, even those still on 'shared' (ingested as
// the limit was set): it moves them to the webhook's lane (Moved, for the
// round to wake it), unclaimed and uncounted, and takes the others'.
func TestClaimShared_NeverTakesARateLimitedWebhooksDeliveries(t *testing.T) {
	f := newRouteFixture(t)
	limited, free := f.webhook(t), f.webhook(t)
	f.ingest(t, limited, 3)
	f.ingest(t, free, 1)
	limit := 5.0
	if _, err := webhooksettings.NewStore(f.pool, f.box).Update(t.Context(), f.account.ID, limited,
		webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: &limit}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Deliveries of an ingestion that read the route before the write
	// committed are still 'shared'.
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET route = 'shared' WHERE subscription_id = $1`, limited); err != nil {
		t.Fatal(err)
	}
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		Limit: 50, Lease: time.Minute, WorkflowID: "shard"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Claimed {
		if c.Webhook.ID == limited {
			t.Errorf("claimed %s of the rate-limited webhook", c.ID)
		}
	}
	if len(page.Claimed) != 1 || len(page.MovedToOwn) != 1 || page.MovedToOwn[0].SubscriptionID != limited {
		t.Fatalf("claimed %d, moved %+v; want the free webhook's 1 claimed and the limited webhook moved", len(page.Claimed), page.MovedToOwn)
	}
	rows, err := f.pool.Query(t.Context(), `SELECT route, attempt_count, leased_until IS NOT NULL FROM webhook_deliveries WHERE subscription_id = $1`, limited)
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Route    string
		Attempts int32
		Leased   bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[state])
	if err != nil || len(got) != 3 {
		t.Fatalf("%d deliveries (err %v)", len(got), err)
	}
	for _, s := range got {
		if s != (state{Route: deliveries.RouteOwn}) {
			t.Errorf("a limited delivery after the claim: %+v, want on 'own', never claimed nor counted", s)
		}
	}
}

// TestClaimShared_ListsOnlyWebhooksMovedToTheirOwnLane: deliveries left on
// 'shared' of webhooks since routed elsewhere all move to their route, but
// only those moved to 'own' are listed for the round to wake: a paused
// webhook's wait for its resume, a held one's for its lane's probe.
func TestClaimShared_ListsOnlyWebhooksMovedToTheirOwnLane(t *testing.T) {
	f := newRouteFixture(t)
	routes := map[string]string{f.webhook(t): deliveries.RouteOwn, f.webhook(t): deliveries.RoutePaused, f.webhook(t): deliveries.RouteHeld}
	for id, route := range routes {
		f.ingest(t, id, 1)
		if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET delivery_route = $2 WHERE id = $1`, id, route); err != nil {
			t.Fatal(err)
		}
	}
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		Limit: 50, Lease: time.Minute, WorkflowID: "shard"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Claimed) != 0 || len(page.MovedToOwn) != 1 || routes[page.MovedToOwn[0].SubscriptionID] != deliveries.RouteOwn ||
		page.MovedToOwn[0].Route != deliveries.RouteOwn {
		t.Fatalf("claimed %d, moved to own %+v; want only the webhook routed 'own' listed", len(page.Claimed), page.MovedToOwn)
	}
	for id, route := range routes {
		var got string
		if err := f.pool.QueryRow(t.Context(), `SELECT route FROM webhook_deliveries WHERE subscription_id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != route {
			t.Errorf("a delivery of the webhook routed %s is on %q after the claim", route, got)
		}
	}
}

// TestClaimShared_EndsTheDeliveriesOfWebhooksDeactivatedOrDeleted: a claim
// that finds due deliveries of a webhook deactivated or deleted since
// (their own ending raced the claim) ends them in the same statement,
// 'skipped' and 'cancelled', lists them as ended, and takes the live
// webhook's beside them.
func TestClaimShared_EndsTheDeliveriesOfWebhooksDeactivatedOrDeleted(t *testing.T) {
	f := newRouteFixture(t)
	live, inactive, deleted := f.webhook(t), f.webhook(t), f.webhook(t)
	for _, id := range []string{live, inactive, deleted} {
		f.ingest(t, id, 2)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET active = false WHERE id = $1`, inactive); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET deleted_at = now() WHERE id = $1`, deleted); err != nil {
		t.Fatal(err)
	}
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		Limit: 50, Lease: time.Minute, WorkflowID: "shard"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Claimed) != 2 || page.Claimed[0].Webhook.ID != live || page.Claimed[1].Webhook.ID != live {
		t.Fatalf("claimed %+v; want the live webhook's two", page.Claimed)
	}
	if len(page.Ended) != 4 {
		t.Fatalf("ended %v; want the four of the webhooks deactivated and deleted", page.Ended)
	}
	for _, tc := range []struct {
		webhook, status, lastError string
		attempts                   int
		final                      bool
	}{
		{live, deliveries.StatusPending, "", 1, false},
		{inactive, deliveries.StatusSkipped, "the webhook was inactive", 0, true},
		{deleted, deliveries.StatusCancelled, "the webhook was deleted", 0, true},
	} {
		rows, err := f.pool.Query(t.Context(), `SELECT status, last_error, attempt_count, completed_at IS NOT NULL,
			next_attempt_at IS NULL, leased_until IS NOT NULL FROM webhook_deliveries WHERE subscription_id = $1`, tc.webhook)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var status, lastError string
			var attempts int
			var completed, notDue, leased bool
			if err := rows.Scan(&status, &lastError, &attempts, &completed, &notDue, &leased); err != nil {
				t.Fatal(err)
			}
			n++
			if status != tc.status || lastError != tc.lastError || attempts != tc.attempts || completed != tc.final ||
				notDue != tc.final || leased == tc.final {
				t.Errorf("webhook %s: a delivery %s (%q), %d attempts, completed %v, not due %v, leased %v; want %s (%q), %d, final %v",
					tc.webhook, status, lastError, attempts, completed, notDue, leased, tc.status, tc.lastError, tc.attempts, tc.final)
			}
		}
		if err := rows.Err(); err != nil || n != 2 {
			t.Fatalf("webhook %s: %d deliveries (%v), want 2", tc.webhook, n, err)
		}
	}
}
