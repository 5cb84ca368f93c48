package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/formats"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

func bodySender(src *fakeSettings) *sender {
	return &sender{settings: newSettingsState(SettingsDeps{Source: src}, time.Now, slog.New(slog.DiscardHandler)), now: time.Now}
}

func claimedRun(webhookID, eventType string, body deliveries.FixedBody) deliveries.Claimed {
	data := eventdata.Marshal(webhooks.RunData{JobID: "42", JobName: "nightly", RunID: "9001", RunStatus: "Errored",
		RunStatusCode: 20, RunStartedAt: "2026-01-02T03:00:00Z", RunErroredAt: "2026-01-02T03:04:00Z"})
	return deliveries.Claimed{Webhook: deliveries.WebhookTarget{ID: webhookID, AccountID: 7, Name: "ops"}, ID: "wdl_1",
		EventID: "wev_1", EventType: eventType, EventData: data, EventToolName: "dbt",
		EventAcceptedAt: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), Body: body}
}

// TestBodyOf: an attempt's body is built at its first attempt in the
// webhook's format and fixed (the spec's by the webhook's name, another
// format as built); a retry sends the fixed body, the spec's built with
// the name it was fixed with; the bytes sent differ only by a PagerDuty
// routing key, read with the settings at every attempt.
func TestBodyOf(t *testing.T) {
	src := &fakeSettings{settings: map[string]webhooksettings.Sending{
		"wsu_slack": {Format: webhooksettings.FormatSlack},
		"wsu_pd":    {Format: webhooksettings.FormatPagerDuty, PagerDutyRoutingKey: "R0UTINGKEY"},
		"wsu_nokey": {Format: webhooksettings.FormatStandard},
	}}
	var none deliveries.FixedBody
	specBody := webhooks.BuildPayload(webhooks.PayloadEnvelope{SubscriptionID: "wsu_std", EventType: webhooks.EventRunErrored})
	pdStored, err := deliveries.BuildBody(deliveries.EventBody{SubscriptionID: "wsu_pd", EventType: webhooks.EventRunErrored,
		EventData: claimedRun("wsu_pd", webhooks.EventRunErrored, none).EventData, Format: "pagerduty"})
	if err != nil {
		t.Fatal(err)
	}
	sn := bodySender(src)
	tests := []struct {
		name      string
		c         deliveries.Claimed
		wantFixed string // "", "name NAME" or "as built" (its bytes)
		wantKind  string
		check     func(t *testing.T, b attemptBody)
	}{
		{"FirstAttemptDefaultIsTheSpecBody", claimedRun("wsu_std", webhooks.EventRunErrored, none), "name ops", "", func(t *testing.T, b attemptBody) {
			if !bytes.HasPrefix(b.stored, []byte(`{"accountId":7,`)) || !bytes.Equal(b.sent, b.stored) {
				t.Errorf("body %s", b.stored)
			}
		}},
		{"FirstAttemptSlack", claimedRun("wsu_slack", webhooks.EventRunErrored, none), "as built", "", func(t *testing.T, b attemptBody) {
			if !bytes.HasPrefix(b.stored, []byte(`{"text":`)) || !bytes.Equal(b.sent, b.stored) {
				t.Errorf("body %s", b.stored)
			}
		}},
		{"FirstAttemptPagerDuty", claimedRun("wsu_pd", webhooks.EventRunErrored, none), "as built", "", func(t *testing.T, b attemptBody) {
			if !formats.IsPagerDuty(b.stored) || bytes.Contains(b.stored, []byte("R0UTINGKEY")) {
				t.Errorf("stored body %s", b.stored)
			}
			if !bytes.HasPrefix(b.sent, []byte(`{"routing_key":"R0UTINGKEY",`)) {
				t.Errorf("sent body %s", b.sent)
			}
		}},
		{"RetryOfABodyFixedByNameIsBuiltWithThatName", claimedRun("wsu_slack", webhooks.EventRunErrored, deliveries.FixedBody{Name: "ops before"}), "", "", func(t *testing.T, b attemptBody) {
			c := claimedRun("wsu_slack", webhooks.EventRunErrored, none)
			want, err := deliveries.BuildBody(deliveries.EventBody{AccountID: 7, SubscriptionID: "wsu_slack", WebhookName: "ops before",
				EventID: c.EventID, EventType: c.EventType, EventData: c.EventData, ToolName: c.EventToolName, AcceptedAt: c.EventAcceptedAt})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.sent, want) || !bytes.Contains(want, []byte(`"webhookName":"ops before"`)) {
				t.Errorf("sent %s, want %s", b.sent, want)
			}
		}},
		{"RetryOfAStoredBodyIsSentAsStored", claimedRun("wsu_slack", webhooks.EventRunErrored, deliveries.FixedBody{Payload: specBody}), "", "", func(t *testing.T, b attemptBody) {
			if !bytes.Equal(b.sent, specBody) {
				t.Errorf("sent %s", b.sent)
			}
		}},
		{"RetryOfAPagerDutyBodyGetsTheKey", claimedRun("wsu_pd", webhooks.EventRunErrored, deliveries.FixedBody{Payload: pdStored}), "", "", func(t *testing.T, b attemptBody) {
			if !bytes.Equal(b.stored, pdStored) || !bytes.HasPrefix(b.sent, []byte(`{"routing_key":"R0UTINGKEY",`)) {
				t.Errorf("sent %s", b.sent)
			}
		}},
		{"PagerDutyBodyWithoutAKeyIsFinal", claimedRun("wsu_nokey", webhooks.EventRunErrored, deliveries.FixedBody{Payload: pdStored}), "", deliveries.KindInvalidPayload, nil},
		{"PagerDutyStartedSendsNothing", claimedRun("wsu_pd", webhooks.EventRunStarted, none), "", deliveries.KindInvalidPayload, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sn.bodyOf(context.Background(), tt.c, formats.RunLinks{})
			fixed := ""
			switch {
			case b.fixed.Name != "" && b.fixed.Payload == nil:
				fixed = "name " + b.fixed.Name
			case b.fixed.Payload != nil && b.fixed.Name == "" && bytes.Equal(b.fixed.Payload, b.stored):
				fixed = "as built"
			case !b.fixed.IsZero():
				fixed = fmt.Sprintf("%+v", b.fixed)
			}
			if b.kind != tt.wantKind || fixed != tt.wantFixed {
				t.Fatalf("kind %q (%s) fixed %q; want kind %q fixed %q", b.kind, b.message, fixed, tt.wantKind, tt.wantFixed)
			}
			if tt.check != nil {
				tt.check(t, b)
			}
		})
	}
}

// TestBodyOf_UnreadableSettingsAreRetried: without its settings an
// attempt cannot know its format or key: it fails as a secret that cannot
// be opened does (retried), and a fixed spec body needs no settings.
func TestBodyOf_UnreadableSettingsAreRetried(t *testing.T) {
	sn := bodySender(&fakeSettings{err: errors.New("the database is away")})
	b := sn.bodyOf(context.Background(), claimedRun("wsu_x", webhooks.EventRunErrored, deliveries.FixedBody{}), formats.RunLinks{})
	if b.kind != deliveries.KindSecret || !deliveries.Retryable(b.kind, 0) {
		t.Fatalf("kind %q", b.kind)
	}
	spec := []byte(`{"accountId":7}`)
	if b := sn.bodyOf(context.Background(), claimedRun("wsu_x", webhooks.EventRunErrored, deliveries.FixedBody{Payload: spec}), formats.RunLinks{}); b.kind != "" || !bytes.Equal(b.sent, spec) {
		t.Fatalf("a stored spec body was not sent as it is: %+v", b)
	}
	if b := sn.bodyOf(context.Background(), claimedRun("wsu_x", webhooks.EventRunErrored, deliveries.FixedBody{Name: "ops"}), formats.RunLinks{}); b.kind != "" ||
		!bytes.Contains(b.sent, []byte(`"webhookName":"ops"`)) {
		t.Fatalf("a spec body fixed by name was not built: %+v", b)
	}
}
