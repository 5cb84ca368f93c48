package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/incidents"
)

// noticeItem is a notice as the API returns it.
type noticeItem struct {
	ID                string `json:"id"`
	WebhookID         string `json:"webhook_id"`
	WebhookName       string `json:"webhook_name"`
	Type              string `json:"type"`
	IncidentStartedAt string `json:"incident_started_at"`
	Status            string `json:"status"`
	AttemptCount      int    `json:"attempt_count"`
	LastStatusCode    string `json:"last_status_code"`
	LastError         string `json:"last_error"`
	CreatedAt         string `json:"created_at"`
	UpdatedAt         string `json:"updated_at"`
}

// mustCreateNotice stores a notice of kind about webhookID as the worker
// does, made ago in the past, and records attempts (status "" for none).
func mustCreateNotice(t testing.TB, s *incidentsAPI, accountID int64, webhookID, kind string, incident time.Time, ago time.Duration, status string, code int, lastErr string) string {
	t.Helper()
	ctx := context.Background()
	id := webhooks.NewID(webhooks.NoticeIDPrefix)
	created, err := s.Incidents.CreateNotice(ctx, incidents.Notice{ID: id, AccountID: accountID, SubscriptionID: webhookID,
		Kind: kind, IncidentStartedAt: incident, Payload: []byte(`{}`)})
	if err != nil || !created {
		t.Fatalf("create notice: %v (created %v)", err, created)
	}
	if status != "" {
		if err := s.Incidents.RecordNoticeAttempt(ctx, id, status, code, lastErr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB.Pool.Exec(ctx, `UPDATE account_notices SET created_at = now() - $2 * interval '1 second' WHERE id = $1`,
		id, ago.Seconds()); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNotices_ListNewestFirst: the account's notices, newest first, with
// the webhook's name, the type, the incident and how sending went; limit
// bounds them; another account's notices are never listed.
func TestNotices_ListNewestFirst(t *testing.T) {
	s := newIncidentsAPI(t)
	alerts := s.mustCreateSub(t, nil)
	body := validBody()
	body["name"] = "Billing sync"
	billing := s.mustCreateSub(t, body)
	incident := time.Now().Add(-4 * time.Hour).Truncate(time.Microsecond)

	opened := mustCreateNotice(t, s, s.Account.ID, alerts.ID, webhooks.NoticeBreakerOpened, incident, 3*time.Hour, "delivered", 204, "")
	disabled := mustCreateNotice(t, s, s.Account.ID, billing.ID, webhooks.NoticeDisabled, incident, 2*time.Hour, "failed", 500, "receiver says 500")
	recovered := mustCreateNotice(t, s, s.Account.ID, alerts.ID, webhooks.NoticeRecovered, incident, time.Hour, "no_endpoint", 0, "")

	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	theirs := mustCreateNotice(t, s, other.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix), webhooks.NoticeDisabled, incident, time.Minute, "", 0, "")

	list := func(t *testing.T, token string, accountID int64, query string) []noticeItem {
		t.Helper()
		resp := doJSON(t, http.MethodGet, s.webhooksURL(accountID)+"/notices"+query, token, nil)
		requireStatus(t, resp, http.StatusOK)
		var got []noticeItem
		resp.decodeData(t, &got)
		return got
	}
	got := list(t, s.Writer, s.Account.ID, "")
	wantIDs := []string{recovered, disabled, opened}
	if len(got) != len(wantIDs) {
		t.Fatalf("notices = %+v, want %d", got, len(wantIDs))
	}
	for i, id := range wantIDs {
		if got[i].ID != id {
			t.Fatalf("notice %d = %s, want %s (newest first)", i, got[i].ID, id)
		}
	}
	wantIncident := strconv.FormatInt(incident.UnixMicro(), 10)
	d := got[1]
	if d.WebhookID != billing.ID || d.WebhookName != "Billing sync" || d.Type != "webhook.disabled" || d.Status != "failed" ||
		d.AttemptCount != 1 || d.LastStatusCode != "500" || d.LastError != "receiver says 500" || d.IncidentStartedAt != wantIncident {
		t.Errorf("disabled notice = %+v", d)
	}
	if o := got[2]; o.Type != "webhook.breaker_opened" || o.Status != "delivered" || o.LastStatusCode != "204" || o.WebhookName != alerts.Name {
		t.Errorf("breaker_opened notice = %+v", o)
	}
	if r := got[0]; r.Type != "webhook.recovered" || r.Status != "no_endpoint" || r.LastStatusCode != "0" {
		t.Errorf("recovered notice = %+v", r)
	}
	if created := microsTime(t, &got[0].CreatedAt); time.Since(created) < 59*time.Minute || time.Since(created) > 61*time.Minute {
		t.Errorf("created_at = %v, want an hour ago", created)
	}
	for _, n := range got {
		if n.ID == theirs {
			t.Fatal("another account's notice is listed")
		}
	}

	if got := list(t, s.Writer, s.Account.ID, "?limit=2"); len(got) != 2 || got[0].ID != recovered || got[1].ID != disabled {
		t.Errorf("limit=2: %+v", got)
	}
	resp := doJSON(t, http.MethodGet, s.webhooksURL(s.Account.ID)+"/notices?limit=1", s.Writer, nil)
	var extra struct {
		Filters struct {
			Limit int `json:"limit"`
		} `json:"filters"`
	}
	if err := json.Unmarshal(resp.Env.Extra, &extra); err != nil || extra.Filters.Limit != 1 {
		t.Errorf("extra = %s, want filters.limit 1", resp.Env.Extra)
	}
	if got := list(t, otherWriter, other.ID, ""); len(got) != 1 || got[0].ID != theirs {
		t.Errorf("the other account's notices = %+v, want only its own", got)
	}
	readOnly := s.mustCreateUser(t, s.Account.ID, "read_only", "read_only").Token
	if got := list(t, readOnly, s.Account.ID, ""); len(got) != 3 {
		t.Errorf("a read-only user lists %d notices, want 3", len(got))
	}
}

// TestNotices_Refusals: a bad limit is a 400 naming it; another account's
// credential, the Developer plan and no credential are refused.
func TestNotices_Refusals(t *testing.T) {
	s := newIncidentsAPI(t)
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	devPlan := s.mustCreateAccount(t, webhooks.PlanDeveloper)
	devAdmin := s.mustCreateUser(t, devPlan.ID, "developer", "account_admin").Token
	tests := []struct {
		name      string
		token     string
		accountID int64
		query     string
		want      int
	}{
		{"LimitZero", s.Writer, s.Account.ID, "?limit=0", http.StatusBadRequest},
		{"LimitTooLarge", s.Writer, s.Account.ID, "?limit=101", http.StatusBadRequest},
		{"LimitNotANumber", s.Writer, s.Account.ID, "?limit=ten", http.StatusBadRequest},
		{"AnotherAccountsCredential", otherWriter, s.Account.ID, "", http.StatusForbidden},
		{"DeveloperPlan", devAdmin, devPlan.ID, "", http.StatusForbidden},
		{"NoCredential", "", s.Account.ID, "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, s.webhooksURL(tt.accountID)+"/notices"+tt.query, tt.token, nil)
			requireErrorEnvelope(t, resp, tt.want)
			if tt.want == http.StatusBadRequest && !strings.HasPrefix(resp.Env.Status.DeveloperMessage, `invalid field "limit"`) {
				t.Errorf("developer_message = %q, want it to name limit", resp.Env.Status.DeveloperMessage)
			}
		})
	}
}
