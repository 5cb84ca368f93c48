package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/worker"
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
		vars := map[string]string{
			"DATABASE_URL":            a.DB.URL,
			"TEMPORAL_ADDRESS":        srv.Address,
			"TEMPORAL_TASK_QUEUE":     testenv.NewTaskQueue(t),
			"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8",
			"SECRET_ENCRYPTION_KEYS":  "k1:" + base64.StdEncoding.EncodeToString(key),
			"DELIVERY_TIMEOUT":        "5s",
			"SHUTDOWN_GRACE_PERIOD":   "2s",
		}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
			Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatalf("dial Temporal: %v", err)
		}
		t.Cleanup(tc.Close)
		d.Subscriptions = mustNewSubscriptions(t, a.DB.Pool, box, &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		d.Deliveries = newDispatch(t, tc, a.DB.Pool, cfg)
		startWorker(t, worker.Deps{Config: cfg, Logger: slog.New(slog.DiscardHandler), Pool: a.DB.Pool, Temporal: tc})
	}
}

// startWorker runs the worker in-process until the test ends.
func startWorker(t *testing.T, deps worker.Deps) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	deps.Ready = ready
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, deps) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("worker did not stop in 15s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("worker: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("worker not polling after 60s")
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
