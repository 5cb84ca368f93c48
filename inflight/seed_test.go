package inflight_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/inflight"
)

// TestLimits_SeedStartsWhatThisWorkerDoesNotHold: a seeded webhook or
// destination starts at what another worker learned (bounded by this
// one's maximum), a seeded destination is not probed, a key this worker
// holds keeps its own limit, and a seed of nothing changes nothing.
func TestLimits_SeedStartsWhatThisWorkerDoesNotHold(t *testing.T) {
	const dest = "1 https://h:443"
	tests := []struct {
		name            string
		webhook         inflight.Learned
		destination     inflight.Learned
		heldBefore      bool // this worker took a permit to both first
		wantWebhook     int
		wantDestination int
		wantRoom        int // DestinationAvailable before any answer
	}{
		{"throttled host", inflight.Learned{Limit: 5}, inflight.Learned{Limit: 6}, false, 5, 6, 6},
		{"grown receiver", inflight.Learned{Limit: 300, SlowStart: true}, inflight.Learned{Limit: 600, SlowStart: true}, false, 300, 600, 600},
		{"beyond this worker's maximum", inflight.Learned{Limit: 5000}, inflight.Learned{Limit: 5000}, false, 1024, 1024, 1024},
		{"nothing learned", inflight.Learned{}, inflight.Learned{}, false, 0, 0, 16},
		{"held here already", inflight.Learned{Limit: 5}, inflight.Learned{Limit: 6}, true, 16, 32, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := inflight.New(inflight.Options{})
			if tt.heldBefore {
				p, ok := l.TryAcquire(inflight.Target{Webhook: "wh", Destination: dest}, t0)
				if !ok {
					t.Fatal("the first permit was refused")
				}
				defer p.Done(inflight.Outcome{Class: inflight.NotSent})
			}
			l.SeedWebhook("wh", tt.webhook, t0)
			l.SeedDestination(dest, tt.destination, t0)
			hook, hookHeld := l.Snapshot("wh")
			d, destHeld := l.DestinationSnapshot(dest)
			if tt.wantWebhook == 0 {
				if hookHeld || destHeld {
					t.Fatalf("a seed of nothing made keys: webhook %v, destination %v", hook, d)
				}
			} else if hook.Limit != tt.wantWebhook || d.Limit != tt.wantDestination {
				t.Errorf("limits webhook %d, destination %d, want %d and %d", hook.Limit, d.Limit, tt.wantWebhook, tt.wantDestination)
			}
			if hookHeld && !tt.heldBefore && hook.SlowStart != tt.webhook.SlowStart {
				t.Errorf("webhook slow start %v, want the learned %v", hook.SlowStart, tt.webhook.SlowStart)
			}
			if got := l.DestinationAvailable(dest); got != tt.wantRoom {
				t.Errorf("DestinationAvailable = %d, want %d", got, tt.wantRoom)
			}
		})
	}
}

// TestLimits_ASeededThrottledLimitGrowsByOneARoundTrip: a limit learned
// after rejections (not in slow start) grows as the worker that learned
// it would have: by about one a round trip, not by a step a success.
func TestLimits_ASeededThrottledLimitGrowsByOneARoundTrip(t *testing.T) {
	for _, slowStart := range []bool{false, true} {
		l := inflight.New(inflight.Options{})
		target := inflight.Target{Webhook: "wh", Destination: "d"}
		l.SeedWebhook("wh", inflight.Learned{Limit: 8, SlowStart: slowStart}, t0)
		l.SeedDestination("d", inflight.Learned{Limit: 100, SlowStart: slowStart}, t0)
		now := t0
		for range 3 { // three round trips, each with the whole limit in flight
			permits := acquireAll(l, target, now)
			now = now.Add(10 * time.Millisecond)
			for _, p := range permits {
				p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: 10 * time.Millisecond})
			}
		}
		snap, _ := l.Snapshot("wh")
		if slowStart && snap.Limit < 8*27 {
			t.Errorf("seeded in slow start: limit %d after three round trips, want at least 8 x 3^3 = 216", snap.Limit)
		}
		if !slowStart && (snap.Limit < 9 || snap.Limit > 12) {
			t.Errorf("seeded throttled: limit %d after three round trips, want about 8 + 3", snap.Limit)
		}
	}
}
