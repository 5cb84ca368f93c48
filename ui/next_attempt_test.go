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
