package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestBreaker_ClosedThenOpen: a webhook's breaker reads closed, with every
// timestamp of an open breaker null; once its breaker is open it says since
// when, when the next probe goes, the failed probes, the failures in a row,
// the incident and the backlog of deliveries waiting; the health object
// carries the same breaker.
func TestBreaker_ClosedThenOpen(t *testing.T) {
	s := newIncidentsAPI(t)
	sub := s.mustCreateSub(t, nil)

	b := s.mustGetBreaker(t, sub.ID)
	want := breakerItem{WebhookID: sub.ID, State: "closed"}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("new webhook's breaker = %+v, want %+v", b, want)
	}

	openBreaker(t, s.testAPI, sub.ID, 2)
	ingestRuns(t, s.Deps.Deliveries, s.Account.ID, 3)
	before := time.Now()
	b = s.mustGetBreaker(t, sub.ID)
	if b.State != "open" || b.FailedProbes != 2 || b.FailuresInARow != 7 || b.Backlog != 3 ||
		b.LastClosedAt != nil || b.IncidentAnnouncedAt != nil {
		t.Fatalf("open breaker = %+v", b)
	}
	if opened := microsTime(t, b.OpenedAt); before.Sub(opened) < 4*time.Minute || before.Sub(opened) > 10*time.Minute {
		t.Errorf("opened_at = %v, want about 5 minutes ago", opened)
	}
	if next := microsTime(t, b.NextProbeAt); next.Sub(before) < 50*time.Minute {
		t.Errorf("next_probe_at = %v, want about an hour from now", next)
	}
	if microsTime(t, b.IncidentStartedAt).After(before) {
		t.Errorf("incident_started_at %v is not in the past", *b.IncidentStartedAt)
	}

	resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID)+"/health", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var h struct {
		Breaker breakerItem `json:"breaker"`
	}
	resp.decodeData(t, &h)
	if !reflect.DeepEqual(h.Breaker, b) {
		t.Errorf("health's breaker = %+v, want the breaker endpoint's %+v", h.Breaker, b)
	}
	// The spec's subscription object is unchanged: no breaker member.
	var spec map[string]json.RawMessage
	resp = doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID), s.Writer, nil)
	resp.decodeData(t, &spec)
	for k := range spec {
		if strings.Contains(k, "breaker") || k == "state" || k == "backlog" {
			t.Errorf("the spec's subscription object gained %q", k)
		}
	}
}

// TestBreakerProbe_MakesTheProbeDueAndWakesTheLane: probing an open
// breaker makes its next probe due now, answers 202 with the breaker, and
// wakes the webhook's own lane (which holds the probe timer).
func TestBreakerProbe_MakesTheProbeDueAndWakesTheLane(t *testing.T) {
	s := newIncidentsAPI(t)
	sub := s.mustCreateSub(t, nil)
	openBreaker(t, s.testAPI, sub.ID, 1)

	asked := time.Now()
	resp := doJSON(t, http.MethodPost, s.subURL(s.Account.ID, sub.ID)+"/breaker/probe", s.Writer, nil)
	requireStatus(t, resp, http.StatusAccepted)
	var b breakerItem
	resp.decodeData(t, &b)
	if b.State != "open" || b.WebhookID != sub.ID || b.FailedProbes != 1 {
		t.Fatalf("breaker after probe = %+v", b)
	}
	if next := microsTime(t, b.NextProbeAt); next.After(time.Now()) || asked.Sub(next) > 5*time.Second {
		t.Errorf("next_probe_at = %v, want now (asked at %v)", next, asked)
	}
	var due bool
	if err := s.DB.Pool.QueryRow(context.Background(),
		`SELECT breaker_next_probe_at <= now() FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&due); err != nil || !due {
		t.Errorf("stored next probe due now: %v (%v)", due, err)
	}
	want := []deliveries.RoutedWebhook{{SubscriptionID: sub.ID, AccountID: s.Account.ID, Route: deliveries.RouteOwn}}
	if got := s.Waker.woken(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("woken lanes = %+v, want %+v", got, want)
	}
}

// TestBreakerProbe_ClosedIs409: a probe of a closed breaker is a 409 in
// the envelope; nothing is changed or woken.
func TestBreakerProbe_ClosedIs409(t *testing.T) {
	s := newIncidentsAPI(t)
	sub := s.mustCreateSub(t, nil)
	resp := doJSON(t, http.MethodPost, s.subURL(s.Account.ID, sub.ID)+"/breaker/probe", s.Writer, nil)
	requireErrorEnvelope(t, resp, http.StatusConflict)
	if !strings.Contains(resp.Env.Status.UserMessage, "not open") {
		t.Errorf("user_message = %q, want it to say the breaker is not open", resp.Env.Status.UserMessage)
	}
	if got := s.Waker.woken(); len(got) != 0 {
		t.Errorf("woken lanes = %+v, want none", got)
	}
	var next *time.Time
	if err := s.DB.Pool.QueryRow(context.Background(),
		`SELECT breaker_next_probe_at FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&next); err != nil || next != nil {
		t.Errorf("stored next probe = %v (%v), want none", next, err)
	}
}

// TestBreaker_Access: reading the breaker takes read permission, probing
// takes write permission; another account's webhook, a deleted one, an
// unknown or malformed id are the same 404; a credential of another
// account gets 403 on this account's path, as everywhere in the API.
func TestBreaker_Access(t *testing.T) {
	s := newIncidentsAPI(t)
	sub := s.mustCreateSub(t, nil)
	openBreaker(t, s.testAPI, sub.ID, 0)
	deleted := s.mustCreateSub(t, nil)
	openBreaker(t, s.testAPI, deleted.ID, 0)
	requireStatus(t, doJSON(t, http.MethodDelete, s.subURL(s.Account.ID, deleted.ID), s.Writer, nil), http.StatusOK)

	readOnly := s.mustCreateUser(t, s.Account.ID, "read_only", "read_only").Token
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	devPlan := s.mustCreateAccount(t, webhooks.PlanDeveloper)
	devUser := s.mustCreateUser(t, devPlan.ID, "developer", "account_admin").Token

	const notFound = "Webhook subscription not found."
	tests := []struct {
		name      string
		token     string
		accountID int64
		webhookID string
		getCode   int
		probeCode int
	}{
		{"Writer", s.Writer, s.Account.ID, sub.ID, http.StatusOK, http.StatusAccepted},
		{"ReadOnlyReadsButCannotProbe", readOnly, s.Account.ID, sub.ID, http.StatusOK, http.StatusForbidden},
		{"AnotherAccountsWebhookIsNotFound", otherWriter, other.ID, sub.ID, http.StatusNotFound, http.StatusNotFound},
		{"AnotherAccountsCredentialIsForbidden", otherWriter, s.Account.ID, sub.ID, http.StatusForbidden, http.StatusForbidden},
		{"DeletedWebhookIsNotFound", s.Writer, s.Account.ID, deleted.ID, http.StatusNotFound, http.StatusNotFound},
		{"UnknownWebhookIsNotFound", s.Writer, s.Account.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix), http.StatusNotFound, http.StatusNotFound},
		{"MalformedWebhookIsNotFound", s.Writer, s.Account.ID, "wsu_%00", http.StatusNotFound, http.StatusNotFound},
		{"DeveloperPlanIsForbidden", devUser, devPlan.ID, sub.ID, http.StatusForbidden, http.StatusForbidden},
		{"NoCredential", "", s.Account.ID, sub.ID, http.StatusUnauthorized, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := s.subURL(tt.accountID, tt.webhookID) + "/breaker"
			get := doJSON(t, http.MethodGet, url, tt.token, nil)
			probe := doJSON(t, http.MethodPost, url+"/probe", tt.token, nil)
			for _, c := range []struct {
				what string
				resp *testResponse
				want int
			}{{"GET", get, tt.getCode}, {"probe", probe, tt.probeCode}} {
				if c.want >= 400 {
					requireErrorEnvelope(t, c.resp, c.want)
				} else {
					requireStatus(t, c.resp, c.want)
				}
				if c.want == http.StatusNotFound && c.resp.Env.Status.UserMessage != notFound {
					t.Errorf("%s: user_message = %q, want %q (the same as any missing webhook)", c.what, c.resp.Env.Status.UserMessage, notFound)
				}
			}
		})
	}
}
