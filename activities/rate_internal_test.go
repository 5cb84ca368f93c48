package activities

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// recordingWaker remembers the webhooks whose workflows it was asked to
// wake.
type recordingWaker struct {
	mu   sync.Mutex
	woke []deliveries.RoutedWebhook
}

func (w *recordingWaker) WakeNow(_ context.Context, webhooks []deliveries.RoutedWebhook) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woke = append(w.woke, webhooks...)
	return nil
}

func (w *recordingWaker) woken() []deliveries.RoutedWebhook {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]deliveries.RoutedWebhook(nil), w.woke...)
}

// rateFixture is a database with an account whose webhooks the activities
// deliver to, and the delivery settings' store that sets their limits.
type rateFixture struct {
	t        *testing.T
	pool     *pgxpool.Pool
	store    *deliveries.Store
	subs     *subscriptions.Store
	settings *webhooksettings.Store
	account  webhooks.Account
	acts     *Set
	waker    *recordingWaker
}

func newRateFixture(t *testing.T, settings SettingsSource) *rateFixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	box := testBox(t)
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "rate", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	f := &rateFixture{t: t, pool: db.Pool, store: deliveries.NewStore(db.Pool), subs: subscriptions.NewStore(db.Pool, box),
		settings: webhooksettings.NewStore(db.Pool, box), account: acct, waker: &recordingWaker{}}
	if settings == nil {
		settings = f.settings
	}
	f.acts = New(Deps{
		Store: f.store, Box: box, HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler),
		Waker: f.waker, Schedule: deliveries.Schedule{Initial: time.Second, Coefficient: 2, Max: time.Minute},
		AttemptTimeout: 5 * time.Second, Settings: SettingsDeps{Source: settings},
		Tuning: Tuning{Shards: 1, PageSize: 50, MaxInFlight: 4, Linger: 20 * time.Millisecond, Patience: 2 * time.Second},
	})
	return f
}

func (f *rateFixture) webhook(url string) string {
	f.t.Helper()
	sub, _, err := f.subs.Create(f.t.Context(), webhooks.Subscription{AccountID: f.account.ID, Name: "hook", ClientURL: url,
		EventTypes: []string{webhooks.EventRunCompleted}, Active: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return sub.ID
}

// limit sets a webhook's rate limit (nil: none) through the settings'
// write, as the API does.
func (f *rateFixture) limit(id string, perSecond *float64) {
	f.t.Helper()
	if _, err := f.settings.Update(f.t.Context(), f.account.ID, id,
		webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: perSecond}}, time.Now()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *rateFixture) route(id string) string {
	f.t.Helper()
	r, err := f.store.Route(f.t.Context(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Route
}

// TestDeliverDue_UnreadableSettingsSendNothing: a lane round that cannot
// read its webhook's settings (its rate limit unknown) fails before it
// claims anything (its store here is none), never sending unthrottled.
func TestDeliverDue_UnreadableSettingsSendNothing(t *testing.T) {
	rs := New(Deps{Logger: slog.New(slog.DiscardHandler),
		Settings: SettingsDeps{Source: &fakeSettings{err: errors.New("the database is away")}}}).Rounds
	if _, err := rs.DeliverDue(t.Context(), RoundInput{SubscriptionID: "wsu_unknown"}); !errors.Is(err, errSettingsUnreadable) {
		t.Errorf("DeliverDue: %v, want %v", err, errSettingsUnreadable)
	}
}

// TestReturnIdleToShard_KeepsARateLimitedWebhookOnItsOwnLane: the lane's idle
// return leaves a webhook with a rate limit on its own route, whatever the
// worker's cached settings say (here: no limit), since the move checks the
// limit as it moves; once the limit is removed, the webhook returns.
func TestReturnIdleToShard_KeepsARateLimitedWebhookOnItsOwnLane(t *testing.T) {
	f := newRateFixture(t, &fakeSettings{}) // a cache that has not seen the limit yet
	id := f.webhook("https://example.com/hook")
	f.limit(id, rate(5))
	if got := f.route(id); got != deliveries.RouteOwn {
		t.Fatalf("route %s after the rate limit was set, want own", got)
	}
	back, err := f.acts.Routes.ReturnIdleToShard(t.Context(), id)
	if err != nil || back.Returned || f.route(id) != deliveries.RouteOwn {
		t.Fatalf("idle return with a rate limit: %+v (err %v), route %s; want kept own", back, err, f.route(id))
	}
	f.limit(id, nil)
	back, err = f.acts.Routes.ReturnIdleToShard(t.Context(), id)
	if err != nil || !back.Returned || f.route(id) != deliveries.RouteShared {
		t.Errorf("idle return without a rate limit: %+v (err %v), route %s; want shared", back, err, f.route(id))
	}
}

// TestDeliverShardRound_LeavesRateLimitedWebhooksToTheirLanes: a shard
// round never claims a rate-limited webhook's deliveries, not even those
// left on 'shared' by an ingestion that raced with the limit: its claim
// moves them to the webhook's route and the round wakes its lane. The
// round delivers the other webhook's.
func TestDeliverShardRound_LeavesRateLimitedWebhooksToTheirLanes(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	f := newRateFixture(t, nil)
	limited := f.webhook(recv.srv.URL + "/limited")
	f.webhook(recv.srv.URL + "/free")
	for _, ev := range []string{"wev_1", "wev_2", "wev_3"} {
		if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: ev, AccountID: f.account.ID,
			Type: webhooks.EventRunCompleted, JobID: "1", RunID: ev}}); err != nil {
			t.Fatal(err)
		}
	}
	f.limit(limited, rate(5))
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET route = 'shared' WHERE subscription_id = $1`, limited); err != nil {
		t.Fatal(err)
	}
	res, err := f.acts.Rounds.DeliverShardRound(t.Context(), ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 3 || recv.max("/limited") != 0 || recv.max("/free") == 0 {
		t.Errorf("%d outcomes, limited receiver saw %d in flight; want the free webhook's 3 and nothing to the limited one",
			len(res.Outcomes), recv.max("/limited"))
	}
	if got := f.waker.woken(); len(got) != 1 || got[0].SubscriptionID != limited || got[0].Route != deliveries.RouteOwn {
		t.Errorf("woke %+v, want the limited webhook's own lane", got)
	}
	var claimedOnce, offLane int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE workflow_id = 'shard-0-of-1' OR attempt_count > 0),
		count(*) FILTER (WHERE route <> 'own') FROM webhook_deliveries WHERE subscription_id = $1`, limited).Scan(&claimedOnce, &offLane); err != nil {
		t.Fatal(err)
	}
	if claimedOnce != 0 || offLane != 0 {
		t.Errorf("of the limited webhook's deliveries, %d were claimed by the shard (and given back) and %d are off its lane; want none",
			claimedOnce, offLane)
	}
}

// TestResume_SendsARateLimitedWebhookToItsOwnLane: resuming a paused
// webhook with a rate limit moves it to its own lane, not its shard, and
// wakes that lane; without a limit it goes back to its shard.
func TestResume_SendsARateLimitedWebhookToItsOwnLane(t *testing.T) {
	f := newRateFixture(t, nil)
	limited, free := f.webhook("https://example.com/limited"), f.webhook("https://example.com/free")
	for _, id := range []string{limited, free} {
		if _, err := f.acts.Routes.ApplyOperatorAction(t.Context(), OperatorAction{Kind: ActionPause, WebhookID: id}); err != nil {
			t.Fatal(err)
		}
	}
	f.limit(limited, rate(5))
	if got := f.route(limited); got != deliveries.RoutePaused {
		t.Fatalf("a paused webhook given a rate limit is %s, want still paused", got)
	}
	for id, want := range map[string]string{limited: deliveries.RouteOwn, free: deliveries.RouteShared} {
		res, err := f.acts.Routes.ApplyOperatorAction(t.Context(), OperatorAction{Kind: ActionResume, WebhookID: id})
		if err != nil || !res.Changed || res.Route != want || f.route(id) != want {
			t.Errorf("resume %s: %+v (err %v), route %s; want changed to %s", id, res, err, f.route(id), want)
		}
	}
	woken := map[string]string{}
	for _, l := range f.waker.woken() {
		woken[l.SubscriptionID] = l.Route
	}
	if woken[limited] != deliveries.RouteOwn || woken[free] != deliveries.RouteShared {
		t.Errorf("woke %v, want the limited webhook's own lane and the other's shard", woken)
	}
}

// TestDeliverShardRound_WakesOnlyOwnLanesOfWhatItsClaimMoved: deliveries
// left on 'shared' by an ingestion that raced with a route change are moved
// by the shard's claim to their webhook's route, and the round wakes only
// the webhooks now on 'own': a paused webhook has nobody to wake (its own
// lane would start and find nothing), a held one has its lane's probe
// timer.
func TestDeliverShardRound_WakesOnlyOwnLanesOfWhatItsClaimMoved(t *testing.T) {
	f := newRateFixture(t, nil)
	routes := map[string]string{
		f.webhook("https://example.com/limited"): deliveries.RouteOwn,
		f.webhook("https://example.com/paused"):  deliveries.RoutePaused,
		f.webhook("https://example.com/held"):    deliveries.RouteHeld,
	}
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
		t.Fatal(err)
	}
	for id, route := range routes {
		// The webhook's route changed after its delivery was made on 'shared'.
		if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET delivery_route = $2 WHERE id = $1`, id, route); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.acts.Rounds.DeliverShardRound(t.Context(), ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 0 {
		t.Errorf("%d outcomes, want none: no webhook is on 'shared'", len(res.Outcomes))
	}
	for id, route := range routes {
		var moved string
		if err := f.pool.QueryRow(t.Context(), `SELECT route FROM webhook_deliveries WHERE subscription_id = $1`, id).Scan(&moved); err != nil {
			t.Fatal(err)
		}
		if moved != route {
			t.Errorf("the %s webhook's delivery is on %q after the claim, want moved to %q", route, moved, route)
		}
	}
	got := f.waker.woken()
	if len(got) != 1 || routes[got[0].SubscriptionID] != deliveries.RouteOwn || got[0].Route != deliveries.RouteOwn {
		t.Errorf("woke %+v, want only the own lane of the webhook routed 'own'", got)
	}
}
