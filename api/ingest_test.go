package api_test

import (
	"net/http"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
)

const testInternalToken = "whi_ingest_test_token_0123456789abcdef"

// withUnreachableTemporal gives the API a delivery service whose Temporal
// never answers: validation must fail before it is asked, and a valid event
// must get a 503, never a 500 or a 202.
func withUnreachableTemporal(t *testing.T) testAPIOption {
	return func(a *testAPI, d *api.Deps) {
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		d.Config.InternalAPIToken = testInternalToken
		d.Deliveries = deliveries.NewService(tc, deliveries.NewStore(a.DB.Pool), d.Config)
	}
}

func ingestBody(accountID int64) map[string]any {
	return map[string]any{
		"accountId": accountID, "eventType": webhooks.EventRunStarted,
		"data": map[string]any{"jobId": 1, "runId": "2", "runStartedAt": "2026-01-02T03:04:05Z"},
	}
}

func TestIngest_ValidationAndAuth(t *testing.T) {
	a := newTestAPI(t, withUnreachableTemporal(t))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events"
	bearer := func(tok string) http.Header {
		h := http.Header{}
		if tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
		return h
	}
	tests := []struct {
		name      string
		header    http.Header
		body      any
		want      int
		wantField string
	}{
		{"NoToken", bearer(""), ingestBody(acct.ID), 401, ""},
		{"UserTokenIsNotInternal", bearer(a.mustCreateUser(t, acct.ID, "developer", "account_admin").Token), ingestBody(acct.ID), 401, ""},
		{"NotJSON", bearer(testInternalToken), "{", 400, ""},
		{"AccountIDFloat", bearer(testInternalToken), map[string]any{"accountId": 1.5, "eventType": "job.run.started", "data": map[string]any{}}, 400, "accountId"},
		{"RunStatusCodeText", bearer(testInternalToken), func() any {
			b := ingestBody(acct.ID)
			b["data"].(map[string]any)["runStatusCode"] = "ten"
			return b
		}(), 400, "data.runStatusCode"},
		{"EventIDObject", bearer(testInternalToken), func() any {
			b := ingestBody(acct.ID)
			b["eventId"] = map[string]any{"a": 1}
			return b
		}(), 400, "eventId"},
		{"ValidButTemporalDown", bearer(testInternalToken), ingestBody(acct.ID), 503, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := doRequest(t, http.MethodPost, url, tt.header, tt.body)
			requireErrorEnvelope(t, r, tt.want)
			if tt.wantField != "" && !strings.Contains(r.Env.Status.DeveloperMessage, tt.wantField) {
				t.Errorf("error does not name %s: %s", tt.wantField, r.Body)
			}
		})
	}
	if strings.Contains(a.Logs.String(), testInternalToken) {
		t.Error("the internal token was logged")
	}
}

func TestIngest_UnconfiguredTokenIsUnavailable(t *testing.T) {
	a := newTestAPI(t, withUnreachableTemporal(t), func(_ *testAPI, d *api.Deps) { d.Config.InternalAPIToken = "" })
	h := http.Header{}
	h.Set("Authorization", "Bearer anything-at-all-anything-at-all-anything")
	r := doRequest(t, http.MethodPost, a.URL+"/internal/v1/job-run-events", h, ingestBody(1))
	requireErrorEnvelope(t, r, http.StatusServiceUnavailable)
}
