package deliveries_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/deliveries"
)

// storedLaneKey is a webhook's lane key as its row has it.
func (f *fixture) storedLaneKey(t *testing.T, id string) int {
	t.Helper()
	var key int
	if err := f.pool.QueryRow(t.Context(), `SELECT lane_key FROM webhook_subscriptions WHERE id = $1`, id).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestQueue_FollowsTheWebhooksDestination: a webhook whose client_url
// moves to another destination takes its due deliveries to that
// destination's lane key (so to its shard); another webhook's stay.
func TestQueue_FollowsTheWebhooksDestination(t *testing.T) {
	f := newRouteFixture(t)
	moving, staying := f.webhook(t), f.webhook(t)
	f.ingest(t, moving, 3)
	f.ingest(t, staying, 2)
	queuedKeys := func(id string) map[int]int {
		t.Helper()
		rows, _ := f.pool.Query(t.Context(), `SELECT lane_key FROM webhook_delivery_queue WHERE subscription_id = $1`, id)
		keys, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		counts := map[int]int{}
		for _, k := range keys {
			counts[k]++
		}
		return counts
	}
	stayingKeys := queuedKeys(staying)
	before := f.storedLaneKey(t, moving)
	var url string
	for i := 0; ; i++ { // a host whose destination bucket differs
		url = fmt.Sprintf("https://moved-%d.example.com/x", i)
		if deliveries.LaneKey(deliveries.DestinationKey(f.account.ID, url), moving)>>4 != before>>4 {
			break
		}
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET client_url = $2 WHERE id = $1`, moving, url); err != nil {
		t.Fatal(err)
	}
	after := f.storedLaneKey(t, moving)
	if after == before {
		t.Fatalf("the lane key stayed %#x after the move", after)
	}
	if got := queuedKeys(moving); len(got) != 1 || got[after] != 3 {
		t.Errorf("the moved webhook's queued lane keys %v, want its 3 at %#x", got, after)
	}
	own := map[int]int{f.storedLaneKey(t, staying): 2}
	if got := queuedKeys(staying); !maps.Equal(got, own) || !maps.Equal(stayingKeys, own) {
		t.Errorf("the other webhook's queued lane keys %v (before the move %v), want %v", got, stayingKeys, own)
	}
	if d := f.queueDiffers(t); d != 0 {
		t.Errorf("%d rows differ between the queue and the records", d)
	}
}

// TestRoutedWebhooks_CarryTheStoredLaneKey: every store path that names a
// webhook to wake gives the lane key its row has, which is how the waker
// finds its shard.
func TestRoutedWebhooks_CarryTheStoredLaneKey(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET client_url = 'https://lanes.example.com/x' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	want := f.storedLaneKey(t, id)
	check := func(path string, r deliveries.RoutedWebhook) {
		t.Helper()
		if r.SubscriptionID != id || r.LaneKey != want {
			t.Errorf("%s: %+v, want webhook %s with lane key %#x", path, r, id, want)
		}
	}

	_, routed, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_lanes_1", f.jobs[id])})
	if err != nil || len(routed) != 1 {
		t.Fatalf("ingest: %v, routed %+v", err, routed)
	}
	check("ingestion", routed[0])

	route, err := f.store.Route(t.Context(), id)
	if err != nil || route.LaneKey != want {
		t.Errorf("Route: %+v (err %v), want lane key %#x", route, err, want)
	}

	moved, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{id},
		From: []string{deliveries.RouteShared}, To: deliveries.RoutePaused, Reason: "test"})
	if err != nil || len(moved) != 1 {
		t.Fatalf("pause: %v, moved %+v", err, moved)
	}
	check("route change", moved[0].RoutedWebhook)
	if _, err := f.store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{id},
		From: []string{deliveries.RoutePaused}, To: deliveries.RouteShared, Reason: "test"}); err != nil {
		t.Fatal(err)
	}

	var original string
	if err := f.pool.QueryRow(t.Context(), `SELECT id FROM webhook_deliveries WHERE subscription_id = $1`, id).Scan(&original); err != nil {
		t.Fatal(err)
	}
	_, redelivered, err := f.store.CreateRedelivery(t.Context(), f.account.ID, id, original)
	if err != nil {
		t.Fatal(err)
	}
	check("redelivery", redelivered)

	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_delivery_queue SET next_attempt_at = now() - interval '1 hour' WHERE subscription_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	overdue, err := f.store.OverdueWebhooks(t.Context(), time.Minute, 10)
	if err != nil || len(overdue) != 1 {
		t.Fatalf("overdue: %v, %+v", err, overdue)
	}
	check("overdue", overdue[0])

	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = $2, next_attempt_at = NULL, completed_at = now() WHERE subscription_id = $1`,
		id, deliveries.StatusFailed); err != nil {
		t.Fatal(err)
	}
	replay, _, err := f.store.CreateReplay(t.Context(), f.account.ID, id, time.Now().Add(-time.Hour), nil, []string{deliveries.StatusFailed})
	if err != nil {
		t.Fatal(err)
	}
	sent, _, replayed, err := f.store.ReplayNextBatch(t.Context(), replay, 10)
	if err != nil || sent == 0 {
		t.Fatalf("replay: sent %d (err %v)", sent, err)
	}
	check("replay", replayed)
}
