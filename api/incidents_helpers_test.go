package api_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
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

// incidentsAPI is a subsAPI with a delivery store (no Temporal) and the
// incident use cases, whose wake-ups are recorded.
type incidentsAPI struct {
	*subsAPI
	Store *deliveries.Store
	// Incidents holds the notices and notification endpoints.
	Incidents *incidents.Store
	Waker     *recordingWaker
}

// withIncidents gives the API the incident use cases over its delivery
// service's store (a.DeliveryStore, set by an earlier option) and store,
// sealing with
// *box and checking URLs with policy; waker nil wakes through the delivery
// service.
func withIncidents(t testing.TB, store **incidents.Store, box **secrets.Box, policy *netguard.Policy, waker incidents.Waker) testAPIOption {
	t.Helper()
	return func(a *testAPI, d *api.Deps) {
		if waker == nil {
			waker = d.Deliveries.Waker()
		}
		*store = incidents.NewStore(a.DB.Pool)
		svc, err := incidents.NewService(a.DeliveryStore, *store, *box, policy, waker)
		if err != nil {
			t.Fatalf("incidents.NewService: %v", err)
		}
		d.Incidents = svc
	}
}

// newIncidentsAPI starts an API with subscriptions, Recent Deliveries (a
// Temporal that never answers) and the incident use cases, a Team account
// and a writer.
func newIncidentsAPI(t testing.TB) *incidentsAPI {
	t.Helper()
	s := &incidentsAPI{subsAPI: &subsAPI{}, Waker: &recordingWaker{}}
	policy := &netguard.Policy{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, policy), withDeliveryStore(t),
		withIncidents(t, &s.Incidents, &s.Box, policy, s.Waker))
	s.Store = s.DeliveryStore
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
	return s
}

// webhooksURL is the account's .../webhooks base URL.
func (s *subsAPI) webhooksURL(accountID int64) string {
	return s.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks"
}

// openBreaker opens a webhook's breaker as the delivery core does, by
// writing its columns: held since 5 minutes, the next probe in an hour,
// failedProbes failed, an incident going on and not announced.
func openBreaker(t testing.TB, a *testAPI, webhookID string, failedProbes int) {
	t.Helper()
	tag, err := a.DB.Pool.Exec(context.Background(), `
		UPDATE webhook_subscriptions
		SET delivery_route = 'held', route_reason = 'breaker opened (test)', route_changed_at = now(),
		    breaker_opened_at = now() - interval '5 minutes', breaker_next_probe_at = now() + interval '1 hour',
		    breaker_failed_probes = $2, attempt_failures_in_a_row = 7,
		    incident_started_at = now() - interval '5 minutes', incident_announced_at = NULL
		WHERE id = $1`, webhookID, failedProbes)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("open the breaker of %s: %v (%d rows)", webhookID, err, tag.RowsAffected())
	}
}

// ingestRuns stores n job-run events of the account through the delivery
// service (a delivery of each for every matching webhook), each of its own
// run.
func ingestRuns(t testing.TB, d *dispatch.Service, accountID int64, n int) {
	t.Helper()
	events := make([]webhooks.Event, n)
	for i := range events {
		data := dispatch.TestRunData(webhooks.EventRunCompleted, time.Now())
		data.JobID, data.RunID = "42", strconv.FormatInt(time.Now().UnixNano()+int64(i), 10)
		events[i] = webhooks.Event{ID: webhooks.NewID(webhooks.EventIDPrefix), AccountID: accountID,
			Type: webhooks.EventRunCompleted, Data: data}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := d.Ingest(ctx, events)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("ingest: %v", r.Err)
		}
	}
}

// breakerItem is the breaker object as the API returns it.
type breakerItem struct {
	WebhookID           string  `json:"webhook_id"`
	State               string  `json:"state"`
	OpenedAt            *string `json:"opened_at"`
	NextProbeAt         *string `json:"next_probe_at"`
	FailedProbes        int     `json:"failed_probes"`
	FailuresInARow      int     `json:"failures_in_a_row"`
	Backlog             int64   `json:"backlog"`
	LastClosedAt        *string `json:"last_closed_at"`
	IncidentStartedAt   *string `json:"incident_started_at"`
	IncidentAnnouncedAt *string `json:"incident_announced_at"`
}

// microsTime reads a microsecond digit string.
func microsTime(t testing.TB, s *string) time.Time {
	t.Helper()
	if s == nil {
		t.Fatal("timestamp is null")
	}
	n, err := strconv.ParseInt(*s, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q: %v", *s, err)
	}
	return time.UnixMicro(n)
}

// mustGetBreaker reads a webhook's breaker with the writer's credential.
func (s *incidentsAPI) mustGetBreaker(t testing.TB, id string) breakerItem {
	t.Helper()
	resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, id)+"/breaker", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var b breakerItem
	resp.decodeData(t, &b)
	return b
}
