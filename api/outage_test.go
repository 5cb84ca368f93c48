package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/netguard"
)

// unreachablePool is a pool whose database never answers: nothing listens
// on port 1, so every query fails to connect at once.
func unreachablePool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/webhooks?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// outageRoute is a /api route called with valid ids and a valid body.
type outageRoute struct{ name, method, path string }

// validBody is a body the route decodes: the subscription's validBody(),
// or the delivery settings' own (which refuse the subscription's fields).
func (r outageRoute) validBody() map[string]any {
	if strings.HasSuffix(r.path, "/delivery-settings") {
		return map[string]any{"on_outage": "hold"}
	}
	return validBody()
}

// apiRoutes lists every /api route that reads or writes through a
// dependency, with the ids of s's account and subscription sub.
func apiRoutes(s *subsAPI, userID int64, sub string) []outageRoute {
	account := strconv.FormatInt(s.Account.ID, 10)
	webhooks := "/api/v3/accounts/" + account + "/webhooks"
	return []outageRoute{
		{"ListAccounts", http.MethodGet, "/api/v2/accounts"},
		{"GetAccount", http.MethodGet, "/api/v2/accounts/" + account},
		{"RotateAPIKey", http.MethodPost, "/api/v2/users/" + strconv.FormatInt(userID, 10) + "/apikey"},
		{"ListSubscriptions", http.MethodGet, webhooks + "/subscriptions"},
		{"CreateSubscription", http.MethodPost, webhooks + "/subscriptions"},
		{"GetSubscription", http.MethodGet, webhooks + "/subscription/" + sub},
		{"UpdateSubscription", http.MethodPut, webhooks + "/subscription/" + sub},
		{"DeleteSubscription", http.MethodDelete, webhooks + "/subscription/" + sub},
		{"TestSubscription", http.MethodGet, webhooks + "/subscription/" + sub + "/test"},
		{"ListDeliveries", http.MethodGet, webhooks + "/subscription/" + sub + "/deliveries"},
		{"GetDelivery", http.MethodGet, webhooks + "/subscription/" + sub + "/deliveries/wdl_unknown"},
		{"RetryDelivery", http.MethodPost, webhooks + "/subscription/" + sub + "/deliveries/wdl_unknown/retry"},
		{"GetDeliverySettings", http.MethodGet, webhooks + "/subscription/" + sub + "/delivery-settings"},
		{"PutDeliverySettings", http.MethodPut, webhooks + "/subscription/" + sub + "/delivery-settings"},
	}
}

// requireUnavailable fails unless resp is a 503 error envelope with
// Retry-After, no challenge and no detail of the failure.
func requireUnavailable(t *testing.T, resp *testResponse) {
	t.Helper()
	requireErrorEnvelope(t, resp, http.StatusServiceUnavailable)
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra <= 0 {
		t.Errorf("Retry-After = %q, want seconds", resp.Header.Get("Retry-After"))
	}
	if h := resp.Header.Get("WWW-Authenticate"); h != "" {
		t.Errorf("WWW-Authenticate = %q on a 503: the credential was not refused", h)
	}
	if body := string(resp.Body); strings.Contains(body, "127.0.0.1") || strings.Contains(body, "closed pool") || strings.Contains(body, "connect") {
		t.Errorf("503 body shows the failure: %s", body)
	}
}

// TestOutage_AuthenticationIs503: when the database is down, authenticating
// any /api request is a 503 with Retry-After, not a 500 (nor a 401).
func TestOutage_AuthenticationIs503(t *testing.T) {
	outages := []struct {
		name  string
		start func(t *testing.T, s *subsAPI) // makes the database unusable
		opt   func(t *testing.T) testAPIOption
	}{
		{"DatabaseStopped", func(t *testing.T, s *subsAPI) { s.DB.Pool.Close() }, nil},
		{"DatabaseUnreachable", nil, func(t *testing.T) testAPIOption {
			return func(a *testAPI, d *api.Deps) { d.Identity = identity.NewStore(unreachablePool(t)) }
		}},
	}
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			opts := []testAPIOption{withDeliveryStore(t)}
			if o.opt != nil {
				opts = append(opts, o.opt(t))
			}
			s := &subsAPI{}
			s.testAPI = newTestAPI(t, append(opts, withSubscriptions(t, &s.Box, nil))...)
			s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
			user := s.mustCreateUser(t, s.Account.ID, "developer", "member")
			s.Writer = user.Token
			sub := webhooks.NewID(webhooks.SubscriptionIDPrefix)
			if o.start != nil {
				o.start(t, s)
			}
			for _, r := range apiRoutes(s, user.ID, sub) {
				t.Run(r.name, func(t *testing.T) {
					requireUnavailable(t, doJSON(t, r.method, s.URL+r.path, user.Token, r.validBody()))
				})
			}
			if logs := s.Logs.String(); !strings.Contains(logs, "dependency unavailable") || strings.Contains(logs, `"msg":"internal error"`) {
				t.Errorf("want outages logged as dependency unavailable, not internal errors:\n%s", logs)
			}
		})
	}
}

// TestOutage_StoresAre503: with authentication working, a database outage
// under subscription reads and writes and Recent Deliveries is a 503 with
// Retry-After, not a 500.
func TestOutage_StoresAre503(t *testing.T) {
	s := &subsAPI{}
	policy := &netguard.Policy{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, policy), func(a *testAPI, d *api.Deps) {
		dead := unreachablePool(t)
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		d.Subscriptions = mustNewSubscriptions(t, dead, s.Box, policy)
		d.DeliverySettings = mustNewDeliverySettings(t, dead, s.Box)
		setDispatch(t, a, d, tc, dead)
	})
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	user := s.mustCreateUser(t, s.Account.ID, "developer", "member")
	s.Writer = user.Token
	for _, r := range apiRoutes(s, user.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix)) {
		if !strings.HasPrefix(r.path, "/api/v3/") {
			continue // the v2 routes use only the identity store, which works
		}
		t.Run(r.name, func(t *testing.T) {
			requireUnavailable(t, doJSON(t, r.method, s.URL+r.path, user.Token, r.validBody()))
		})
	}
}
