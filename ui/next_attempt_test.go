package ui

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestNextAttempt(t *testing.T) {
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	for _, tc := range []struct {
		name   string
		status string
		next   *time.Time
		want   string
	}{
		{"InSeconds", deliveries.StatusRetrying, at(30 * time.Second), "3 Nov 2026, 10:00:30 UTC (in 30 s)"},
		{"UnderASecond", deliveries.StatusRetrying, at(200 * time.Millisecond), "3 Nov 2026, 10:00:00 UTC (in 1 s)"},
		{"InMinutes", deliveries.StatusRetrying, at(90 * time.Minute), "3 Nov 2026, 11:30:00 UTC (in 90 min)"},
		{"InHours", deliveries.StatusRetrying, at(3 * time.Hour), "3 Nov 2026, 13:00:00 UTC (in 3 h)"},
		{"DueOrUnderWay", deliveries.StatusRetrying, at(-time.Second), "due now"},
		{"RetryingWithoutTime", deliveries.StatusRetrying, nil, ""},
		{"Pending", deliveries.StatusPending, at(time.Minute), ""},
		{"Final", deliveries.StatusFailed, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nextAttempt(deliveries.Delivery{Status: tc.status, NextAttemptAt: tc.next}, now)
			if got != tc.want {
				t.Errorf("nextAttempt = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWait: the status column's note under the badge is short; a held
// delivery waits for the breaker's probe, not for an attempt.
func TestWait(t *testing.T) {
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	for _, tc := range []struct {
		name      string
		status    string
		held      bool
		next      *time.Time
		probe     *time.Time
		wantLabel string
		want      string // "" for no note
		wantAt    *time.Time
	}{
		{"Retrying", deliveries.StatusRetrying, false, at(22 * time.Second), nil, "retrying", "next attempt in 22 s", at(22 * time.Second)},
		{"RetryingDue", deliveries.StatusRetrying, false, at(-time.Second), nil, "retrying", "next attempt due now", at(-time.Second)},
		{"HeldRetrying", deliveries.StatusRetrying, true, at(22 * time.Second), at(10 * time.Minute), "held", "next probe in 10 min", at(10 * time.Minute)},
		{"HeldPending", deliveries.StatusPending, true, at(0), at(3 * time.Hour), "held", "next probe in 3 h", at(3 * time.Hour)},
		{"HeldProbeDue", deliveries.StatusRetrying, true, at(time.Hour), &now, "held", "next probe due now", &now},
		{"HeldBreakerUnknown", deliveries.StatusRetrying, true, at(time.Minute), nil, "held", "until the endpoint answers", nil},
		// A delivery the probe ended keeps its route: it waits for nothing.
		{"HeldButFinal", deliveries.StatusFailed, true, nil, at(time.Minute), "failed", "", nil},
		{"Pending", deliveries.StatusPending, false, at(time.Minute), nil, "pending", "", nil},
		{"Succeeded", deliveries.StatusSucceeded, false, nil, nil, "succeeded", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := deliveryRow{Delivery: deliveries.Delivery{Status: tc.status, Held: tc.held, NextAttemptAt: tc.next}, NextProbeAt: tc.probe}
			if got := row.StatusLabel(); got != tc.wantLabel {
				t.Errorf("StatusLabel = %q, want %q", got, tc.wantLabel)
			}
			got := wait(row, now)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("wait = %+v, want none", *got)
			case tc.want == "":
			case got == nil:
				t.Errorf("wait = none, want %q", tc.want)
			case got.Text != tc.want || (got.At == nil) != (tc.wantAt == nil) || (got.At != nil && !got.At.Equal(*tc.wantAt)):
				t.Errorf("wait = %q at %v, want %q at %v", got.Text, got.At, tc.want, tc.wantAt)
			}
			if row.OnHold() && row.NextAttempt() != "" {
				t.Errorf("a held delivery promises a next attempt: %q", row.NextAttempt())
			}
		})
	}
}
