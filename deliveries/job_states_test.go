package deliveries_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

func TestOutcomeTime(t *testing.T) {
	d := webhooks.RunData{RunStartedAt: "2026-11-01T00:00:00Z", RunFinishedAt: "2026-11-01T00:05:00Z", RunErroredAt: "2026-11-01T00:03:00Z"}
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	for _, tc := range []struct {
		name      string
		eventType string
		data      webhooks.RunData
		want      time.Time
	}{
		{"errored: its error time", webhooks.EventRunErrored, d, at(d.RunErroredAt)},
		{"completed: its finish time", webhooks.EventRunCompleted, d, at(d.RunFinishedAt)},
		{"errored without an error time: its finish time", webhooks.EventRunErrored,
			webhooks.RunData{RunStartedAt: d.RunStartedAt, RunFinishedAt: d.RunFinishedAt}, at(d.RunFinishedAt)},
		{"completed with a start only: its start", webhooks.EventRunCompleted, webhooks.RunData{RunStartedAt: d.RunStartedAt}, at(d.RunStartedAt)},
		{"no time: zero (ingestion time)", webhooks.EventRunErrored, webhooks.RunData{}, time.Time{}},
		{"started: not an outcome", webhooks.EventRunStarted, d, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deliveries.OutcomeTime(tc.eventType, tc.data); !got.Equal(tc.want) {
				t.Errorf("OutcomeTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunOrderKey_OrdersRuns(t *testing.T) {
	// Each run id is older than the next.
	ordered := []string{"", "0", "2", "9", "10", "0011", "99", "100", "123456789012345678901234567890", "a", "b-1", "b-2"}
	for i := 1; i < len(ordered); i++ {
		a, b := deliveries.RunOrderKey(ordered[i-1]), deliveries.RunOrderKey(ordered[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("RunOrderKey(%q) = %q is not before RunOrderKey(%q) = %q", ordered[i-1], a, ordered[i], b)
		}
	}
	if !bytes.Equal(deliveries.RunOrderKey("007"), deliveries.RunOrderKey("7")) {
		t.Error("leading zeros change the key")
	}
}
