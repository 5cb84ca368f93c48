package api_test

import (
	"net/http"
	"testing"

	"go.temporal.io/sdk/client"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/netguard"
)

// incidentRoutes are the breaker, notification endpoint and notice routes
// with valid ids and bodies.
func incidentRoutes(s *subsAPI, sub string) []outageRoute {
	base := s.webhooksURL(s.Account.ID)[len(s.URL):]
	return []outageRoute{
		{"GetBreaker", http.MethodGet, base + "/subscription/" + sub + "/breaker"},
		{"ProbeBreaker", http.MethodPost, base + "/subscription/" + sub + "/breaker/probe"},
		{"GetNotificationEndpoint", http.MethodGet, base + "/notification-endpoint"},
		{"PutNotificationEndpoint", http.MethodPut, base + "/notification-endpoint"},
		{"DeleteNotificationEndpoint", http.MethodDelete, base + "/notification-endpoint"},
		{"RotateNotificationSecret", http.MethodPost, base + "/notification-endpoint/secret/rotate"},
		{"ListNotices", http.MethodGet, base + "/notices"},
	}
}

// TestIncidents_DatabaseOutageIs503: with authentication working, a
// database outage under the breaker, notification endpoint and notice
// routes is a 503 with Retry-After, logged as such, not a 500.
func TestIncidents_DatabaseOutageIs503(t *testing.T) {
	s := &subsAPI{}
	policy := &netguard.Policy{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, policy), func(a *testAPI, d *api.Deps) {
		dead := unreachablePool(t)
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		setDispatch(t, a, d, tc, dead)
		if d.Incidents, err = incidents.NewService(a.DeliveryStore, incidents.NewStore(dead), s.Box, policy, &recordingWaker{}); err != nil {
			t.Fatal(err)
		}
	})
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
	body := map[string]any{"url": "https://" + publicHost + "/notices"}
	for _, r := range incidentRoutes(s, webhooks.NewID(webhooks.SubscriptionIDPrefix)) {
		t.Run(r.name, func(t *testing.T) {
			requireUnavailable(t, doJSON(t, r.method, s.URL+r.path, s.Writer, body))
		})
	}
}

// TestIncidents_NotConfiguredIs503: a server without the incident use
// cases answers their routes 503 in the envelope, after authentication.
func TestIncidents_NotConfiguredIs503(t *testing.T) {
	s := newSubsAPI(t, nil)
	for _, r := range incidentRoutes(s, webhooks.NewID(webhooks.SubscriptionIDPrefix)) {
		t.Run(r.name, func(t *testing.T) {
			requireUnavailable(t, doJSON(t, r.method, s.URL+r.path, s.Writer, nil))
		})
	}
}
