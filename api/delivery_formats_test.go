package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const apiRoutingKey = "R0UTING0KEY0api0123456789abcdefZ"

// formatsItem is the issue 38 members of the delivery settings.
type formatsItem struct {
	Format                 string  `json:"format"`
	NotifyOn               string  `json:"notify_on"`
	Filter                 *string `json:"filter"`
	PagerDutyRoutingKey    *string `json:"pagerduty_routing_key"`
	PagerDutyRoutingKeySet bool    `json:"pagerduty_routing_key_set"`
}

// TestDeliverySettings_FormatsRoundTrip: format, notify_on and filter are
// stored and shown; the routing key is stored sealed, never shown (null,
// pagerduty_routing_key_set true), kept when a PUT leaves it null (a GET
// answer sent back), and dropped with another format.
func TestDeliverySettings_FormatsRoundTrip(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)
	filter := `data.environmentName == "Prod" && data.runReason != "Triggered via API"`
	put := doJSON(t, http.MethodPut, url, s.Writer, map[string]any{
		"format": "pagerduty", "notify_on": "state_change", "filter": filter, "pagerduty_routing_key": apiRoutingKey,
	})
	requireStatus(t, put, http.StatusOK)
	var got formatsItem
	put.decodeData(t, &got)
	if got.Format != "pagerduty" || got.NotifyOn != "state_change" || got.Filter == nil || *got.Filter != filter ||
		got.PagerDutyRoutingKey != nil || !got.PagerDutyRoutingKeySet {
		t.Fatalf("PUT answered %s", put.Env.Data)
	}
	get := doJSON(t, http.MethodGet, url, s.Writer, nil)
	requireStatus(t, get, http.StatusOK)
	if !bytes.Equal(get.Env.Data, put.Env.Data) {
		t.Errorf("GET %s\nPUT %s", get.Env.Data, put.Env.Data)
	}
	for _, body := range [][]byte{put.Body, get.Body} {
		if bytes.Contains(body, []byte(apiRoutingKey)) {
			t.Fatalf("the routing key is shown: %s", body)
		}
	}
	if o := s.mustOpenSettings(t, sub.ID); o.Format != "pagerduty" || o.PagerDutyRoutingKey != apiRoutingKey {
		t.Fatalf("sending = %q %q", o.Format, o.PagerDutyRoutingKey)
	}
	if strings.Contains(s.Logs.String(), apiRoutingKey) {
		t.Fatal("the routing key is logged")
	}

	requireStatus(t, doJSON(t, http.MethodPut, url, s.Writer, []byte(get.Env.Data)), http.StatusOK)
	if o := s.mustOpenSettings(t, sub.ID); o.PagerDutyRoutingKey != apiRoutingKey {
		t.Fatalf("after sending the GET back the routing key is %q", o.PagerDutyRoutingKey)
	}

	// A PUT replaces: without format it is standard, and the key goes.
	again := doJSON(t, http.MethodPut, url, s.Writer, map[string]any{"notify_on": "every"})
	requireStatus(t, again, http.StatusOK)
	again.decodeData(t, &got)
	if got.Format != "standard" || got.NotifyOn != "every" || got.Filter != nil || got.PagerDutyRoutingKeySet {
		t.Fatalf("after a PUT without format: %s", again.Env.Data)
	}
	if o := s.mustOpenSettings(t, sub.ID); o.PagerDutyRoutingKey != "" {
		t.Fatal("the routing key is kept with the standard format")
	}
}

// TestDeliverySettings_FormatsRefusals: every bad value of a new field, and
// every member the delivery settings do not know (misspelt, other case,
// nested), is a 400 naming it; the stored settings, the sealed routing key
// included, are unchanged after each.
func TestDeliverySettings_FormatsRefusals(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)
	requireStatus(t, doJSON(t, http.MethodPut, url, s.Writer, map[string]any{
		"format": "pagerduty", "pagerduty_routing_key": apiRoutingKey, "notify_on": "state_change",
		"filter": `eventType == "job.run.errored"`, "on_outage": "hold",
		"headers": []map[string]any{{"name": "X-Keep", "value": "kept"}},
	}), http.StatusOK)
	before := doJSON(t, http.MethodGet, url, s.Writer, nil).Env.Data
	keep := func(extra map[string]any) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(before, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		body  any
		field string // named in developer_message
		says  string // in user_message
	}{
		{"FormatUnknown", keep(map[string]any{"format": "discord"}), "format", `"slack"`},
		{"FormatWrongCase", keep(map[string]any{"format": "Slack"}), "format", `"Slack"`},
		{"FormatNotString", `{"format": 1}`, "format", "string"},
		{"NotifyOnUnknown", keep(map[string]any{"notify_on": "changes"}), "notify_on", `"state_change"`},
		{"NotifyOnNotString", `{"notify_on": ["every"]}`, "notify_on", "string"},
		{"FilterSyntax", keep(map[string]any{"filter": `data.environmentName ==`}), "filter", "Syntax error"},
		{"FilterUnknownField", keep(map[string]any{"filter": `data.env == "Prod"`}), "filter", "undeclared reference"},
		{"FilterNotBool", keep(map[string]any{"filter": `data.runStatusCode`}), "filter", "bool"},
		{"FilterTypeMismatch", keep(map[string]any{"filter": `data.runStatusCode == "20"`}), "filter", "no matching overload"},
		{"FilterTooLong", keep(map[string]any{"filter": `data.jobId == "` + strings.Repeat("1", 2000) + `"`}), "filter", "2000"},
		{"FilterTooCostly", keep(map[string]any{"filter": `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, a+b+c+d > 0))))`}), "filter", "cost"},
		{"FilterEmpty", keep(map[string]any{"filter": ""}), "filter", "null"},
		{"FilterNotString", `{"filter": true}`, "filter", "string"},
		{"FilterInvalidUTF8", `{"filter": "data.jobId == \"\ud800\""}`, "filter", "UTF-8"},
		{"PagerDutyWithoutKey", map[string]any{"format": "pagerduty", "pagerduty_routing_key": ""}, "pagerduty_routing_key", "printable"},
		{"RoutingKeyWithSlack", keep(map[string]any{"format": "slack", "pagerduty_routing_key": apiRoutingKey}), "pagerduty_routing_key", `"slack"`},
		{"RoutingKeyWithoutFormat", map[string]any{"pagerduty_routing_key": apiRoutingKey}, "pagerduty_routing_key", `"standard"`},
		{"RoutingKeySpaces", keep(map[string]any{"pagerduty_routing_key": "abc def"}), "pagerduty_routing_key", "printable"},
		{"RoutingKeyNotString", `{"format": "pagerduty", "pagerduty_routing_key": 42}`, "pagerduty_routing_key", "string"},
		{"UnknownMisspeltOnOutage", keep(map[string]any{"on_outag": "retry"}), "on_outag", "on_outage"},
		{"UnknownOtherCase", keep(map[string]any{"FORMAT": "slack"}), "FORMAT", "format"},
		{"UnknownTopLevel", keep(map[string]any{"routing_key": apiRoutingKey}), "routing_key", "pagerduty_routing_key"},
		{"UnknownInHeader", `{"headers": [{"name": "X-A", "valeu": "1"}]}`, "headers[0].valeu", "name, value, secret"},
		{"UnknownInCertificate", `{"client_certificate": {"cert": "PEM"}}`, "client_certificate.cert", "private_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, url, s.Writer, tt.body)
			requireFieldRefused(t, resp, tt.field, tt.says)
			if after := doJSON(t, http.MethodGet, url, s.Writer, nil).Env.Data; !bytes.Equal(after, before) {
				t.Errorf("a refused PUT changed the settings:\n%s\n%s", before, after)
			}
			if o := s.mustOpenSettings(t, sub.ID); o.PagerDutyRoutingKey != apiRoutingKey || o.Format != "pagerduty" {
				t.Errorf("a refused PUT changed what is sent: %q %q", o.Format, o.PagerDutyRoutingKey)
			}
		})
	}
}

// TestDeliverySettings_PagerDutyNeedsAKey: choosing pagerduty on a webhook
// without a stored key, with the key absent or null, is a 400 naming it.
func TestDeliverySettings_PagerDutyNeedsAKey(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)
	for _, body := range []string{`{"format": "pagerduty"}`, `{"format": "pagerduty", "pagerduty_routing_key": null}`} {
		resp := doJSON(t, http.MethodPut, url, s.Writer, body)
		requireErrorEnvelope(t, resp, http.StatusBadRequest)
		if !strings.Contains(resp.Env.Status.DeveloperMessage, `invalid field "pagerduty_routing_key"`) {
			t.Errorf("%s: developer_message %q", body, resp.Env.Status.DeveloperMessage)
		}
		var got formatsItem
		doJSON(t, http.MethodGet, url, s.Writer, nil).decodeData(t, &got)
		if got.Format != "standard" {
			t.Errorf("%s: format = %q after the refusal", body, got.Format)
		}
	}
}
