package ui_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/netguard/netguardtest"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/ui"
)

// recordingWaker is an incidents.Waker that remembers what it was asked
// to wake.
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

// withIncidents gives the UI the incident use cases over its delivery
// service's store (tu.Store, which an earlier option sets), sealing with the
// UI's box; notification URLs may be loopback or hooks.example.com. waker
// nil wakes through the delivery service.
func withIncidents(t *testing.T, waker incidents.Waker) uiOption {
	return func(tu *testUI, d *ui.Deps) {
		t.Helper()
		policy := &netguard.Policy{
			Allow:    []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Resolver: netguardtest.Resolver(t, map[string][]netip.Addr{"hooks.example.com": {netip.MustParseAddr("93.184.215.14")}}),
		}
		if waker == nil {
			waker = d.Deliveries.Waker()
		}
		svc, err := incidents.NewService(tu.Store, incidents.NewStore(tu.DB.Pool), tu.Box, policy, waker)
		if err != nil {
			t.Fatal(err)
		}
		d.Incidents = svc
	}
}

// mustCreateSub stores a webhook of the account to clientURL.
func (tu *testUI) mustCreateSub(t *testing.T, accountID int64, name, clientURL string) webhooks.Subscription {
	t.Helper()
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: accountID, Name: name, ClientURL: clientURL, EventTypes: []string{webhooks.EventRunCompleted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// openBreaker opens a webhook's breaker as the delivery core does, by
// writing its columns: held since 5 minutes, failedProbes failed, the next
// probe in nextProbeIn (a PostgreSQL interval).
func (tu *testUI) openBreaker(t *testing.T, webhookID string, failedProbes int, nextProbeIn string) {
	t.Helper()
	tag, err := tu.DB.Pool.Exec(context.Background(), `
		UPDATE webhook_subscriptions
		SET delivery_route = 'held', route_reason = 'breaker opened (test)', route_changed_at = now(),
		    breaker_opened_at = now() - interval '5 minutes', breaker_next_probe_at = now() + $3::interval,
		    breaker_failed_probes = $2, attempt_failures_in_a_row = 7, incident_started_at = now() - interval '5 minutes'
		WHERE id = $1`, webhookID, failedProbes, nextProbeIn)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("open the breaker of %s: %v", webhookID, err)
	}
}

// ingest stores n events of the account, each of its own run, with a
// delivery for every matching webhook; nothing is woken.
func (tu *testUI) ingest(t *testing.T, accountID int64, n int) {
	t.Helper()
	events := make([]deliveries.NewEvent, n)
	for i := range events {
		events[i] = deliveries.NewEvent{ID: webhooks.NewID(webhooks.EventIDPrefix), AccountID: accountID,
			Type: webhooks.EventRunCompleted, JobID: "7", RunID: webhooks.NewID("run_"), Data: webhooks.RunData{JobID: "7"}, ToolName: "dbt"}
	}
	if _, _, err := deliveries.NewStore(tu.DB.Pool).IngestEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
}

// recordRetrying stores an event of the account's run with a delivery to
// the webhook whose first attempt got a 503 and is retried in retryIn; it
// returns the delivery's id.
func (tu *testUI) recordRetrying(t *testing.T, accountID int64, webhookID, runID string, retryIn time.Duration) string {
	t.Helper()
	eventID := webhooks.NewID(webhooks.EventIDPrefix)
	if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: eventID, AccountID: accountID,
		Type: webhooks.EventRunCompleted, JobID: "7", RunID: runID, Data: webhooks.RunData{JobID: "7"}, ToolName: "dbt"}}); err != nil {
		t.Fatal(err)
	}
	rec := deliveries.AttemptRecord{SubscriptionID: webhookID, DeliveryID: testenv.DeliveryID(t, tu.DB.Pool, eventID, webhookID), AttemptNumber: 1,
		StartedAt: time.Now(), Duration: 30 * time.Millisecond, StatusCode: 503, ErrorKind: "http_status",
		Status: deliveries.StatusRetrying, RetryIn: retryIn, Body: deliveries.FixedBody{Payload: []byte(`{}`)}}
	if _, err := tu.Store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{rec}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	return rec.DeliveryID
}

// hold moves deliveries to the route 'held', as the delivery core does
// with a webhook's pending deliveries while its breaker is open.
func (tu *testUI) hold(t *testing.T, deliveryIDs ...string) {
	t.Helper()
	tag, err := tu.DB.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET route = 'held' WHERE id = ANY($1)`, deliveryIDs)
	if err != nil || tag.RowsAffected() != int64(len(deliveryIDs)) {
		t.Fatalf("hold %v: %v", deliveryIDs, err)
	}
}
