package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
)

// withDeliveryEngine gives the API subscriptions and the real delivery
// engine: a Temporal dev server of the test's own, and an in-process worker
// that may deliver to loopback receivers.
func withDeliveryEngine(t *testing.T) testAPIOption {
	t.Helper()
	srv := testenv.StartTemporalServer(t, testenv.FreeAddress(t), "")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	return func(a *testAPI, d *api.Deps) {
		d.Subscriptions = mustNewSubscriptions(t, a.DB.Pool, box, &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		e := enginetest.Start(t, a.DB.URL, a.DB.Pool, srv.Address, key, nil)
		setDelivery(a, d, e.Dispatch, e.Store)
	}
}

// TestTestWebhook_DataIsExactlySpec: the test endpoint's data is exactly
// spec 4.5's {verification_error, verification_status_code}; the test
// delivery's id is in the Webhook-Delivery-Id header, and names the
// delivery in Recent Deliveries.
func TestTestWebhook_DataIsExactlySpec(t *testing.T) {
	a := newTestAPI(t, withDeliveryEngine(t))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	writer := a.mustCreateUser(t, acct.ID, "developer", "member").Token
	s := &subsAPI{testAPI: a, Account: acct, Writer: writer}

	tests := []struct {
		name     string
		status   int
		wantData func(data []byte) bool
	}{
		{"EndpointAnswers2xx", http.StatusOK, func(data []byte) bool {
			return string(data) == `{"verification_error":null,"verification_status_code":"200"}`
		}},
		{"EndpointFails", http.StatusServiceUnavailable, func(data []byte) bool {
			return bytes.HasPrefix(data, []byte(`{"verification_error":"`)) &&
				bytes.HasSuffix(data, []byte(`","verification_status_code":"503"}`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
			}))
			t.Cleanup(receiver.Close)
			body := validBody()
			body["client_url"] = receiver.URL + "/hook"
			sub := s.mustCreateSub(t, body)

			resp := doJSON(t, http.MethodGet, s.subURL(acct.ID, sub.ID)+"/test", writer, nil)
			requireStatus(t, resp, http.StatusOK)
			if !tt.wantData(resp.Env.Data) {
				t.Errorf("data = %s, want exactly spec 4.5's two fields", resp.Env.Data)
			}
			var members map[string]json.RawMessage
			resp.decodeData(t, &members)
			if keys := slices.Sorted(maps.Keys(members)); strings.Join(keys, ",") != "verification_error,verification_status_code" {
				t.Errorf("data members = %v", keys)
			}
			id := resp.Header.Get("Webhook-Delivery-Id")
			if !webhooks.IsDeliveryID(id) {
				t.Fatalf("Webhook-Delivery-Id = %q, want a delivery id", id)
			}
			got := doJSON(t, http.MethodGet, s.subURL(acct.ID, sub.ID)+"/deliveries/"+id, writer, nil)
			requireStatus(t, got, http.StatusOK)
			var d struct {
				ID     string `json:"id"`
				IsTest bool   `json:"is_test"`
			}
			got.decodeData(t, &d)
			if d.ID != id || !d.IsTest {
				t.Errorf("delivery %s = %s, want the test delivery", id, got.Env.Data)
			}
		})
	}
}
