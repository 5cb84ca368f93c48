package api_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDeliveryRoutes_AnotherAccountsWebhookIsNotFound: every route of a
// webhook's deliveries (health with its breaker and in-flight limit,
// Recent Deliveries, a delivery, replays) answers another account's webhook
// under the caller's own account path 404, as it answers an unknown one,
// and shows and changes nothing of it; its own account reads the same ids.
func TestDeliveryRoutes_AnotherAccountsWebhookIsNotFound(t *testing.T) {
	s := &subsAPI{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, nil), withDeliveryStore(t))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
	s.mustCreateSub(t, nil)

	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	resp := doJSON(t, http.MethodPost, s.subsURL(other.ID), otherWriter, validBody())
	requireStatus(t, resp, http.StatusCreated)
	var theirs subItem
	resp.decodeData(t, &theirs)
	ingestRuns(t, s.Deps.Deliveries, other.ID, 1)
	ctx := context.Background()
	list, _, err := s.DeliveryStore.ListDeliveries(ctx, other.ID, theirs.ID, deliveries.ListFilter{Limit: 1})
	if err != nil || len(list) != 1 {
		t.Fatalf("their deliveries: %v, %v", list, err)
	}
	delivery := list[0].ID
	replay, _, err := s.DeliveryStore.CreateReplay(ctx, other.ID, theirs.ID, time.Now().Add(-time.Hour), nil,
		[]string{deliveries.StatusFailed})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryStore.SaveInFlightLimits(ctx, []deliveries.InFlightLimit{{WebhookID: theirs.ID, Limit: 77}}); err != nil {
		t.Fatal(err)
	}

	routes := []struct {
		name, method, path string
	}{
		{"Health", http.MethodGet, "/health"},
		{"ListDeliveries", http.MethodGet, "/deliveries"},
		{"GetDelivery", http.MethodGet, "/deliveries/" + delivery},
		{"RetryDelivery", http.MethodPost, "/deliveries/" + delivery + "/retry"},
		{"StartReplay", http.MethodPost, "/deliveries/replay"},
		{"GetReplay", http.MethodGet, "/replays/" + replay},
		{"CancelReplay", http.MethodPost, "/replays/" + replay + "/cancel"},
	}
	body := map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			resp := doJSON(t, r.method, s.subURL(s.Account.ID, theirs.ID)+r.path, s.Writer, body)
			requireNotFoundWithoutPermission(t, resp)
			for _, secret := range []string{delivery, replay, `"in_flight"`, `"breaker"`} {
				if bytes.Contains(resp.Body, []byte(secret)) {
					t.Errorf("404 shows %s: %s", secret, resp.Body)
				}
			}
		})
	}
	// Their own account reads the same ids, and the replay still runs.
	for _, path := range []string{"/health", "/deliveries", "/deliveries/" + delivery, "/replays/" + replay} {
		resp := doJSON(t, http.MethodGet, s.subURL(other.ID, theirs.ID)+path, otherWriter, nil)
		requireStatus(t, resp, http.StatusOK)
	}
	if r, err := s.DeliveryStore.Replay(ctx, other.ID, theirs.ID, replay); err != nil || r.Status != deliveries.ReplayRunning {
		t.Errorf("their replay after the 404s = %+v, %v; want it still running", r, err)
	}
}
