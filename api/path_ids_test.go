package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
)

// withDeliveryStore gives the API a delivery service over the test's
// database whose Temporal never answers: enough for Recent Deliveries reads,
// and every send (test, retry) is unavailable.
func withDeliveryStore(t testing.TB) testAPIOption {
	t.Helper()
	return func(a *testAPI, d *api.Deps) {
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		setDispatch(t, a, d, tc, a.DB.Pool)
	}
}

// TestPathIDs_MalformedAreNotFound: a path id that cannot be an id (NUL,
// invalid UTF-8, control characters) is a 404 in the error envelope like any
// malformed id. It must never reach the database, which refuses such text
// with an error that would be a 500 and an internal-error log line.
func TestPathIDs_MalformedAreNotFound(t *testing.T) {
	s := &subsAPI{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, nil), withDeliveryStore(t))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	writer := s.mustCreateUser(t, s.Account.ID, "developer", "member")
	s.Writer = writer.Token
	sub := s.mustCreateSub(t, nil)

	account := strconv.FormatInt(s.Account.ID, 10)
	webhook := "/api/v3/accounts/" + account + "/webhooks/subscription/"
	// Each route with {id} in place of one path id; the others are valid.
	routes := []struct{ name, method, path string }{
		{"GetAccount", http.MethodGet, "/api/v2/accounts/{id}"},
		{"RotateAPIKey", http.MethodPost, "/api/v2/users/{id}/apikey"},
		{"ListSubscriptionsAccount", http.MethodGet, "/api/v3/accounts/{id}/webhooks/subscriptions"},
		{"CreateSubscriptionAccount", http.MethodPost, "/api/v3/accounts/{id}/webhooks/subscriptions"},
		{"GetSubscriptionAccount", http.MethodGet, "/api/v3/accounts/{id}/webhooks/subscription/" + sub.ID},
		{"GetSubscription", http.MethodGet, webhook + "{id}"},
		{"UpdateSubscription", http.MethodPut, webhook + "{id}"},
		{"DeleteSubscription", http.MethodDelete, webhook + "{id}"},
		{"TestSubscription", http.MethodGet, webhook + "{id}/test"},
		{"ListDeliveriesWebhook", http.MethodGet, webhook + "{id}/deliveries"},
		{"GetDeliveryWebhook", http.MethodGet, webhook + "{id}/deliveries/wdl_unknown"},
		{"RetryDeliveryWebhook", http.MethodPost, webhook + "{id}/deliveries/wdl_unknown/retry"},
		{"GetDelivery", http.MethodGet, webhook + sub.ID + "/deliveries/{id}"},
		{"RetryDelivery", http.MethodPost, webhook + sub.ID + "/deliveries/{id}/retry"},
	}
	ids := []struct{ name, escaped string }{
		{"NUL", "%00"},
		{"PrefixedNUL", "wsu_%00abc"},
		{"DeliveryPrefixedNUL", "wdl_%00abc"},
		{"InvalidUTF8", "%ff%fe"},
		{"PrefixedInvalidUTF8", "wsu_%ff%fe"},
		{"DeliveryPrefixedInvalidUTF8", "wdl_%c3%28"},
		{"DigitsThenNUL", "1%00"},
		{"ControlCharacter", "wsu_a%0Ab"},
	}
	for _, r := range routes {
		for _, id := range ids {
			t.Run(r.name+"/"+id.name, func(t *testing.T) {
				url := s.URL + strings.Replace(r.path, "{id}", id.escaped, 1)
				resp := doJSON(t, r.method, url, s.Writer, validBody())
				requireErrorEnvelope(t, resp, http.StatusNotFound)
			})
		}
	}
	if logs := s.Logs.String(); strings.Contains(logs, "internal error") {
		t.Errorf("a malformed path id was logged as an internal error:\n%s", logs)
	}
}
