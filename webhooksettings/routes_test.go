package webhooksettings_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// recordingWaker remembers the lanes it was asked to wake.
type recordingWaker struct {
	mu    sync.Mutex
	lanes []deliveries.RoutedWebhook
}

func (w *recordingWaker) Wake(lanes []deliveries.RoutedWebhook) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lanes = append(w.lanes, lanes...)
}

func (w *recordingWaker) woken() []deliveries.RoutedWebhook {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]deliveries.RoutedWebhook(nil), w.lanes...)
}

// TestUpdate_RateLimitRoutesTheWebhookOwn: setting a rate limit moves a
// webhook on the shared route to its own lane in the same write, with its
// pending deliveries, and the service wakes that lane; a paused webhook
// stays paused, other settings move nothing, and removing the limit leaves
// the webhook to its lane's idle return.
func TestUpdate_RateLimitRoutesTheWebhookOwn(t *testing.T) {
	f := newFixture(t)
	store := deliveries.NewStore(f.db.Pool)
	subs, err := subscriptions.NewService(f.subs, &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	p := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: f.a, License: "developer", PermissionSets: []string{"member"}}}}
	access, err := subs.Authorize(p, strconv.FormatInt(f.a.ID, 10), true)
	if err != nil {
		t.Fatal(err)
	}
	waker := &recordingWaker{}
	svc, err := webhooksettings.NewService(f.store, webhooksettings.WakeLanes(waker))
	if err != nil {
		t.Fatal(err)
	}
	route := func(id string) deliveries.WebhookRoute {
		t.Helper()
		r, err := store.Route(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	update := func(id string, u webhooksettings.Update) {
		t.Helper()
		if _, err := svc.Update(t.Context(), access, id, u); err != nil {
			t.Fatal(err)
		}
	}
	limit := webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: ptr(5.0)}}

	t.Run("SharedGoesOwnWithItsDeliveries", func(t *testing.T) {
		sub := f.mustCreateWebhook(t, f.a)
		for i := range 2 {
			if _, _, err := store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: fmt.Sprintf("wev_rate_%d", i),
				AccountID: f.a.ID, Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
				t.Fatal(err)
			}
		}
		update(sub.ID, limit)
		r := route(sub.ID)
		if r.Route != deliveries.RouteOwn || len(deliveries.Allowed(deliveries.RouteShared, r.Route)) == 0 {
			t.Fatalf("route %s (%s), want own, a transition of the table", r.Route, r.Reason)
		}
		var onShared int
		if err := f.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries
			WHERE subscription_id = $1 AND next_attempt_at IS NOT NULL AND route <> 'own'`, sub.ID).Scan(&onShared); err != nil || onShared != 0 {
			t.Errorf("%d pending deliveries left off its lane (err %v)", onShared, err)
		}
		if got := waker.woken(); len(got) != 1 || got[0].SubscriptionID != sub.ID || got[0].Route != deliveries.RouteOwn {
			t.Errorf("woke %+v, want its own lane", got)
		}
	})
	t.Run("PausedStaysPaused", func(t *testing.T) {
		sub := f.mustCreateWebhook(t, f.a)
		if _, err := store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{sub.ID},
			From: []string{deliveries.RouteShared}, To: deliveries.RoutePaused, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		update(sub.ID, limit)
		if r := route(sub.ID); r.Route != deliveries.RoutePaused {
			t.Errorf("route %s, want paused (its resume goes to its own lane)", r.Route)
		}
	})
	t.Run("OtherSettingsMoveNothing", func(t *testing.T) {
		sub := f.mustCreateWebhook(t, f.a)
		update(sub.ID, webhooksettings.Update{Headers: &[]webhooksettings.HeaderInput{{Name: "X-Team", Value: ptr("data")}}})
		if r := route(sub.ID); r.Route != deliveries.RouteShared {
			t.Errorf("route %s, want shared", r.Route)
		}
	})
	t.Run("RemovingTheLimitLeavesItToItsLane", func(t *testing.T) {
		sub := f.mustCreateWebhook(t, f.a)
		update(sub.ID, limit)
		update(sub.ID, webhooksettings.Update{Rate: &webhooksettings.Rate{}})
		if r := route(sub.ID); r.Route != deliveries.RouteOwn {
			t.Errorf("route %s, want own until its lane is idle", r.Route)
		}
	})
}
