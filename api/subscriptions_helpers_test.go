package api_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/netguard/netguardtest"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// Host names the subscription tests' resolver knows.
const (
	publicHost   = "hooks.example.com"    // a global address
	loopbackHost = "loopback.example.com" // 127.0.0.1
	privateHost  = "private.example.com"  // 10.0.0.7
)

// subsAPI is a test API with the subscription dependencies, an account and
// a credential that may change its webhooks.
type subsAPI struct {
	*testAPI
	Box     *secrets.Box
	Account webhooks.Account
	Writer  string // a Team account's developer-licensed user's token
}

// withSubscriptions gives the API the subscription use cases with a fresh
// encryption key and policy (nil: the default, strict one) whose resolver
// knows publicHost, loopbackHost and privateHost.
func withSubscriptions(t testing.TB, box **secrets.Box, policy *netguard.Policy) testAPIOption {
	t.Helper()
	*box = mustNewBox(t)
	if policy == nil {
		policy = &netguard.Policy{}
	}
	policy.Resolver = netguardtest.Resolver(t, map[string][]netip.Addr{
		publicHost:   {netip.MustParseAddr("93.184.215.14")},
		loopbackHost: {netip.MustParseAddr("127.0.0.1")},
		privateHost:  {netip.MustParseAddr("10.0.0.7")},
	})
	return func(a *testAPI, d *api.Deps) {
		d.Subscriptions = mustNewSubscriptions(t, a.DB.Pool, *box, policy)
		d.DeliverySettings = mustNewDeliverySettings(t, a.DB.Pool, *box)
	}
}

// mustNewDeliverySettings returns the delivery settings use cases over pool.
func mustNewDeliverySettings(t testing.TB, pool *pgxpool.Pool, box *secrets.Box) *webhooksettings.Service {
	t.Helper()
	svc, err := webhooksettings.NewService(webhooksettings.NewStore(pool, box))
	if err != nil {
		t.Fatalf("webhooksettings.NewService: %v", err)
	}
	return svc
}

// mustNewBox returns a secret box with one fresh key.
func mustNewBox(t testing.TB) *secrets.Box {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b, err := secrets.NewBox([]secrets.Key{{ID: "test1", Key: key}})
	if err != nil {
		t.Fatalf("secret box: %v", err)
	}
	return b
}

// mustNewSubscriptions returns the subscription use cases over pool.
func mustNewSubscriptions(t testing.TB, pool *pgxpool.Pool, box *secrets.Box, policy *netguard.Policy) *subscriptions.Service {
	t.Helper()
	svc, err := subscriptions.NewService(subscriptions.NewStore(pool, box), policy)
	if err != nil {
		t.Fatalf("subscriptions.NewService: %v", err)
	}
	return svc
}

// newSubsAPI starts an API with subscriptions, a Team account and a writer.
func newSubsAPI(t testing.TB, policy *netguard.Policy) *subsAPI {
	t.Helper()
	s := &subsAPI{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, policy))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
	return s
}

// subsURL is the list/create URL of accountID.
func (s *subsAPI) subsURL(accountID int64) string {
	return s.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks/subscriptions"
}

// subURL is the get/update/delete URL of webhook id in accountID.
func (s *subsAPI) subURL(accountID int64, id string) string {
	return s.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks/subscription/" + id
}

// validBody is a create body that passes every rule.
func validBody() map[string]any {
	return map[string]any{
		"name":        "Run alerts",
		"description": "Tells the on-call channel",
		"client_url":  "https://" + publicHost + "/webhooks",
		"event_types": []string{webhooks.EventRunCompleted, webhooks.EventRunErrored},
		"job_ids":     []int64{42, 7},
		"active":      true,
	}
}

// subItem is a subscription as the API returns it, decoded loosely.
type subItem struct {
	HMACSecret        *string  `json:"hmac_secret"`
	ID                string   `json:"id"`
	AccountIdentifier string   `json:"account_identifier"`
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	JobIDs            []string `json:"job_ids"`
	EventTypes        []string `json:"event_types"`
	ClientURL         string   `json:"client_url"`
	Active            bool     `json:"active"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	DispatchedAt      *string  `json:"dispatched_at"`
	AccountID         string   `json:"account_id"`
	HTTPStatusCode    string   `json:"http_status_code"`
}

// mustCreateSub creates a subscription in the test account from body
// (nil: validBody()) and returns it.
func (s *subsAPI) mustCreateSub(t testing.TB, body map[string]any) subItem {
	t.Helper()
	if body == nil {
		body = validBody()
	}
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, body)
	requireStatus(t, resp, http.StatusCreated)
	var got subItem
	resp.decodeData(t, &got)
	return got
}

// subscriptionRowCount counts every row (deleted or not) of the table.
func (s *subsAPI) subscriptionRowCount(t testing.TB) int {
	t.Helper()
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_subscriptions").Scan(&n); err != nil {
		t.Fatalf("count subscriptions: %v", err)
	}
	return n
}

// mustGetSub reads a subscription through the API.
func (s *subsAPI) mustGetSub(t testing.TB, id string) subItem {
	t.Helper()
	resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, id), s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var got subItem
	resp.decodeData(t, &got)
	return got
}
