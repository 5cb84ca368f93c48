package activities

import (
	"testing"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestLaneWakes_AMovedWebhooksLaneWakesWhenItsLastHandedAttemptEnds: a
// webhook moved to its own lane while attempts of its were handed over is
// woken when the last of them ends, not when it moved (its lane could
// claim nothing before); one with none running is woken at once.
func TestLaneWakes_AMovedWebhooksLaneWakesWhenItsLastHandedAttemptEnds(t *testing.T) {
	l := newLaneWakes()
	hung := deliveries.RoutedWebhook{SubscriptionID: "wsu_hung", AccountID: 1, Route: deliveries.RouteOwn}
	done := deliveries.RoutedWebhook{SubscriptionID: "wsu_done", AccountID: 1, Route: deliveries.RouteOwn}
	l.handed(hung.SubscriptionID)
	l.handed(hung.SubscriptionID)
	l.handed(done.SubscriptionID)
	if _, ok := l.ended(done.SubscriptionID); ok {
		t.Fatal("woke a lane before its webhook moved")
	}
	now := l.movedNow([]deliveries.RoutedWebhook{hung, done})
	if len(now) != 1 || now[0] != done {
		t.Fatalf("woken at the move: %+v, want only the webhook with no attempt running", now)
	}
	if _, ok := l.ended(hung.SubscriptionID); ok {
		t.Fatal("woke the lane while one of its handed-over attempts still runs")
	}
	if got, ok := l.ended(hung.SubscriptionID); !ok || got != hung {
		t.Fatalf("at its last attempt's end: %+v %v, want its lane woken", got, ok)
	}
	if _, ok := l.ended(hung.SubscriptionID); ok {
		t.Error("woke a lane twice")
	}
}
