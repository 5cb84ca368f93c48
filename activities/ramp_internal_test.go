package activities

import (
	"context"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestRamp_RoundsShareASecondsAllowance: a drain's second allows its
// attempts once, however many rounds of the lane ask in it (back-to-back
// rounds each got the whole allowance before), what a page did not attempt
// is given back, and the next second allows its own.
func TestRamp_RoundsShareASecondsAllowance(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	uses := &rampUses{now: clock.now, breaker: deliveries.Breaker{Threshold: 5, RampStart: 4, RampFull: 64}}
	closedAt := clock.now().Add(-100 * time.Millisecond) // 100 ms ago, by the database
	round := func() *ramp { return &ramp{uses: uses, closedAt: closedAt, use: uses.use("wh_a", closedAt)} }

	first := round()
	if n, ok := first.take(context.Background(), 3); !ok || n != 3 {
		t.Fatalf("first round took %d, want 3 of the second's 4", n)
	}
	second := round() // the next round, in the same second
	if n, ok := second.take(context.Background(), 3); !ok || n != 1 {
		t.Fatalf("second round took %d, want the 1 left of the second's 4", n)
	}
	second.used(1, 0) // its page found nothing to attempt
	if n, _ := round().take(context.Background(), 3); n != 1 {
		t.Fatalf("after a page gave back its 1, a round took %d, want 1", n)
	}
	clock.add(time.Second) // the next second allows 8
	if n, _ := round().take(context.Background(), 20); n != 8 {
		t.Fatalf("next second: took %d, want 8", n)
	}
	if other := uses.use("wh_b", closedAt); other == first.use {
		t.Fatal("two webhooks share a ramp")
	}
}
