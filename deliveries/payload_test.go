package deliveries_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/formats"
)

func sampleBody(eventType string, format string) deliveries.EventBody {
	status, code := webhooks.DefaultRunStatus(eventType)
	d := webhooks.RunData{JobID: "42", JobName: "nightly", RunID: "9001", EnvironmentID: "3", EnvironmentName: "Prod",
		ToolVersion: "1.7.4", ProjectName: "Analytics", ProjectID: "5", RunStatus: status, RunStatusCode: code,
		RunStatusMessage: "Database Error", RunReason: "Kicked off from the UI", RunStartedAt: "2026-01-02T03:00:00Z"}
	switch eventType {
	case webhooks.EventRunCompleted:
		d.RunFinishedAt = "2026-01-02T03:04:12Z"
	case webhooks.EventRunErrored:
		d.RunErroredAt = "2026-01-02T03:04:12Z"
	}
	data := eventdata.Marshal(d)
	return deliveries.EventBody{AccountID: 7, SubscriptionID: "wsu_a", WebhookName: "ops", EventID: "wev_1",
		EventType: eventType, EventData: data, ToolName: "dbt", AcceptedAt: time.Date(2026, 1, 2, 3, 5, 0, 17, time.UTC),
		Format: format, Links: formats.RunLinks{Template: "https://ci.example.com/runs/{runId}"}}
}

func envelopeFor(b deliveries.EventBody) webhooks.PayloadEnvelope {
	d, _ := eventdata.Unmarshal(b.EventData)
	return webhooks.PayloadEnvelope{AccountID: b.AccountID, SubscriptionID: b.SubscriptionID, EventID: b.EventID,
		Timestamp: b.AcceptedAt, EventType: b.EventType, WebhookName: b.WebhookName, Data: d, ToolName: b.ToolName}
}

// TestBuildBody_InTheWebhooksFormat: the one home of a delivery's body
// builds it in the webhook's format, with the run's link.
func TestBuildBody_InTheWebhooksFormat(t *testing.T) {
	tests := []struct {
		name, format, eventType string
		wantErr                 error
	}{
		{"NoFormatIsTheSpecsBody", "", webhooks.EventRunErrored, nil},
		{"Standard", "standard", webhooks.EventRunCompleted, nil},
		{"Slack", "slack", webhooks.EventRunErrored, nil},
		{"Teams", "teams", webhooks.EventRunStarted, nil},
		{"PagerDutyTrigger", "pagerduty", webhooks.EventRunErrored, nil},
		{"PagerDutyStartedSendsNothing", "pagerduty", webhooks.EventRunStarted, formats.ErrNothingToSend},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sampleBody(tt.eventType, tt.format)
			got, err := deliveries.BuildBody(b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			f, _ := formats.Parse(tt.format)
			e := envelopeFor(b)
			want, _ := formats.Build(f, formats.Input{Envelope: e, RunURL: "https://ci.example.com/runs/9001"})
			if !bytes.Equal(got, want) {
				t.Fatalf("body:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestBuildBody_UnknownFormatIsAnError(t *testing.T) {
	if _, err := deliveries.BuildBody(sampleBody(webhooks.EventRunErrored, "discord")); err == nil {
		t.Fatal("an unknown format built a body")
	}
}

func TestTestBody(t *testing.T) {
	links := formats.RunLinks{Template: "https://ci.example.com/runs/{runId}"}
	tests := []struct {
		name, format, eventType string
		wantType                string
	}{
		{"StandardIsTheSample", "standard", webhooks.EventRunStarted, ""},
		{"Slack", "slack", webhooks.EventRunCompleted, webhooks.EventRunCompleted},
		{"Teams", "teams", webhooks.EventRunErrored, webhooks.EventRunErrored},
		{"PagerDutyResolve", "pagerduty", webhooks.EventRunCompleted, webhooks.EventRunCompleted},
		{"PagerDutyStartedBecomesATrigger", "pagerduty", webhooks.EventRunStarted, webhooks.EventRunErrored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := envelopeFor(sampleBody(tt.eventType, ""))
			spec := webhooks.BuildPayload(e)
			gotType, body, err := deliveries.TestBody(e, tt.format, links)
			if err != nil || gotType != tt.wantType {
				t.Fatalf("TestBody = %q, %v; want type %q", gotType, err, tt.wantType)
			}
			if tt.format == "standard" {
				if !bytes.Equal(body, spec) {
					t.Fatal("a standard webhook's test is not its sample")
				}
				return
			}
			if tt.format == "pagerduty" {
				var ev struct {
					EventAction string `json:"event_action"`
				}
				if err := json.Unmarshal(body, &ev); err != nil || ev.EventAction == "" || !formats.IsPagerDuty(body) {
					t.Fatalf("not a PagerDuty event: %s", body)
				}
				return
			}
			f, _ := formats.Parse(tt.format)
			want, _ := formats.Build(f, formats.Input{Envelope: e, RunURL: "https://ci.example.com/runs/9001"})
			if !bytes.Equal(body, want) {
				t.Fatalf("body:\n%s\nwant:\n%s", body, want)
			}
		})
	}
}
