package ui

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"InSeconds", 40 * time.Second, "in 40 s"},
		{"InMinutes", 3 * time.Minute, "in 3 min"},
		{"InHours", 5 * time.Hour, "in 5 h"},
		{"SecondsAgo", -20 * time.Second, "20 s ago"},
		{"MinutesAgo", -12*time.Minute - 10*time.Second, "12 min ago"},
		{"HoursAgo", -26 * time.Hour, "26 h ago"},
		{"Now", 300 * time.Millisecond, "just now"},
		{"JustBefore", -300 * time.Millisecond, "just now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relativeTime(now.Add(tc.d), now); got != tc.want {
				t.Errorf("relativeTime(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

func TestNewBreakerBanner(t *testing.T) {
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	for _, tc := range []struct {
		name      string
		state     deliveries.BreakerState
		wantNil   bool
		opened    string
		nextProbe string
		hasNextAt bool
	}{
		{"Closed", deliveries.BreakerState{ClosedAt: at(-time.Hour)}, true, "", "", false},
		{"OpenProbeLater", deliveries.BreakerState{Open: true, OpenedAt: at(-7 * time.Minute), NextProbeAt: at(2 * time.Minute), Backlog: 9}, false, "7 min ago", "in 2 min", true},
		{"OpenProbeDue", deliveries.BreakerState{Open: true, OpenedAt: at(-time.Hour), NextProbeAt: at(-time.Second)}, false, "60 min ago", "due now", false},
		{"OpenWithoutProbeTime", deliveries.BreakerState{Open: true, OpenedAt: at(-time.Minute)}, false, "1 min ago", "due now", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBreakerBanner(tc.state, now)
			if (b == nil) != tc.wantNil {
				t.Fatalf("banner = %+v, want nil %v", b, tc.wantNil)
			}
			if b == nil {
				return
			}
			if b.OpenedAgo != tc.opened || b.NextProbe != tc.nextProbe || (b.NextProbeAt != nil) != tc.hasNextAt || b.Backlog != tc.state.Backlog {
				t.Errorf("banner = %+v, want opened %q, next probe %q (time shown %v)", b, tc.opened, tc.nextProbe, tc.hasNextAt)
			}
		})
	}
}
