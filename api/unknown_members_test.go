package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
)

// TestUnknownMembers_OurObjectsRefuseThem: a member the service's own
// request objects do not know is a 400 naming it, on every route that
// takes one; the spec's webhook create and update bodies and ingested
// events (the spec's payload) keep ignoring theirs, as the spec's clients
// expect (docs/api.md, "Unknown fields").
func TestUnknownMembers_OurObjectsRefuseThem(t *testing.T) {
	s := &subsAPI{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, nil), withIngestion(t, nil), withEveryArea(t, s))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "account_admin").Token
	sub := s.mustCreateSub(t, nil)
	base := s.URL + "/api/v3/accounts/" + strconv.FormatInt(s.Account.ID, 10) + "/webhooks"
	for _, tt := range []struct {
		name, method, url string
		body              any
		field             string
	}{
		{"DeliverySettings", http.MethodPut, s.settingsURL(s.Account.ID, sub.ID), map[string]any{"on_outag": "hold"}, "on_outag"},
		{"DeliverySettingsHeader", http.MethodPut, s.settingsURL(s.Account.ID, sub.ID), `{"headers":[{"name":"X-A","value":"1","Secret":true}]}`, "headers[0].Secret"},
		{"SecretRotation", http.MethodPost, s.subURL(s.Account.ID, sub.ID) + "/secret/rotate", map[string]any{"expire_previous_in_second": 60}, "expire_previous_in_second"},
		{"Replay", http.MethodPost, s.subURL(s.Account.ID, sub.ID) + "/deliveries/replay", map[string]any{"since": "2026-01-01T00:00:00Z", "statuses": []string{"failed"}}, "statuses"},
		{"Listener", http.MethodPost, base + "/listeners", map[string]any{"name": "laptop", "event_type": []string{"job.run.started"}}, "event_type"},
		{"ListenerAnswer", http.MethodPost, base + "/listeners/" + webhooks.NewID(webhooks.ListenerIDPrefix) + "/attempts/" + webhooks.NewID(webhooks.ListenerAttemptIDPrefix) + "/answer",
			map[string]any{"status_code": 200, "status": 200}, "status"},
		{"NotificationEndpoint", http.MethodPut, base + "/notification-endpoint", map[string]any{"url": "https://" + publicHost + "/n", "URL": "x"}, "URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, tt.method, tt.url, s.Writer, tt.body)
			requireFieldRefused(t, resp, tt.field, "not a known field")
		})
	}

	t.Run("SpecCreateIgnores", func(t *testing.T) {
		body := validBody()
		body["colour"], body["NAME"], body["id"] = "red", "shouted", "wsu_mine"
		resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, body)
		requireStatus(t, resp, http.StatusCreated)
		var got subItem
		resp.decodeData(t, &got)
		if got.Name != "Run alerts" || got.ID == "wsu_mine" {
			t.Errorf("created %+v", got)
		}
	})
	t.Run("SpecUpdateIgnores", func(t *testing.T) {
		get := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID), s.Writer, nil)
		requireStatus(t, get, http.StatusOK)
		var m map[string]any
		if err := json.Unmarshal(get.Env.Data, &m); err != nil {
			t.Fatal(err)
		}
		m["colour"], m["description"] = "red", "changed"
		resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, sub.ID), s.Writer, m)
		requireStatus(t, resp, http.StatusOK)
		var got subItem
		resp.decodeData(t, &got)
		if got.Description != "changed" {
			t.Errorf("updated %+v", got)
		}
	})
	t.Run("IngestedEventIgnores", func(t *testing.T) {
		body := ingestBody(s.Account.ID)
		body["timestamp"], body["webhooksID"] = "2026-01-02T03:04:05.000000000Z", sub.ID
		body["data"].(map[string]any)["runner"] = "eu-1"
		resp := doRequest(t, http.MethodPost, s.URL+"/internal/v1/job-run-events", internalBearer(testInternalToken), body)
		requireStatus(t, resp, http.StatusAccepted)
	})
}
