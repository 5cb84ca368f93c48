package activities

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestPipeline_ClaimsOnlyWhatMayGoNow: a webhook never has more attempts
// in flight than its limit, the claims ask for its room and what its
// answers free within claimAhead, and nothing is claimed and given back.
func TestPipeline_ClaimsOnlyWhatMayGoNow(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 30 * time.Millisecond, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 4, Linger: 50 * time.Millisecond, Patience: 2 * time.Second}, nil)
	ids := h.due("wh_a", recv.srv.URL+"/a", 30)
	p := h.run(context.Background())
	if got := recv.max("/a"); got > 4 {
		t.Errorf("receiver saw %d in flight, want at most the limit 4", got)
	}
	for i, rooms := range h.claims.asked {
		// Its room, and what its 30 ms answers free within claimAhead
		// (50 ms: once its limit).
		if room, ok := rooms["wh_a"]; ok && room > 8 {
			t.Errorf("claim %d asked for room %d, want at most 8", i, room)
		}
	}
	if len(p.giveBack) != 0 {
		t.Errorf("gave back %d claimed deliveries, want none", len(p.giveBack))
	}
	for _, id := range ids {
		if h.rec.rec[id].Status != deliveries.StatusSucceeded {
			t.Errorf("delivery %s: status %q, want succeeded", id, h.rec.rec[id].Status)
		}
	}
}

// TestPipeline_LimitGrowsWithAReceiverThatTakesIt: a receiver that
// answers in 100 ms whatever its load gets more than the initial 16 in
// flight once answers come back: the webhook's limit grows.
func TestPipeline_LimitGrowsWithAReceiverThatTakesIt(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 100 * time.Millisecond, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 200, MaxInFlight: 256, Linger: 50 * time.Millisecond, Patience: 2 * time.Second}, nil)
	h.due("wh_roomy", recv.srv.URL+"/roomy", 600)
	start := time.Now()
	p := h.run(context.Background())
	if got := recv.max("/roomy"); got <= 32 {
		t.Errorf("receiver saw at most %d in flight, want the limit grown well past the initial 16", got)
	}
	if len(h.rec.rec) != 600 || len(p.giveBack) != 0 {
		t.Errorf("recorded %d of 600, gave back %d", len(h.rec.rec), len(p.giveBack))
	}
	t.Logf("600 deliveries to a 100 ms receiver in %s, at most %d in flight", time.Since(start).Round(time.Millisecond), recv.max("/roomy"))
}

// TestPipeline_WebhooksOnOneHostShareItsCapacity: 20 webhooks on one host
// that answers 429 above 8 requests in flight: after the first answers,
// the destination's limit keeps the host near 8, so few attempts get 429.
func TestPipeline_WebhooksOnOneHostShareItsCapacity(t *testing.T) {
	var mu sync.Mutex
	total, rejected, lateRejected := 0, 0, 0
	start := time.Now()
	recv := newFakeReceiver(t, func(_ string, hostInFlight int) (time.Duration, int) {
		mu.Lock()
		defer mu.Unlock()
		total++
		if hostInFlight > 8 {
			rejected++
			if time.Since(start) > time.Second {
				lateRejected++
			}
			return 5 * time.Millisecond, http.StatusTooManyRequests
		}
		return 50 * time.Millisecond, http.StatusNoContent
	})
	h := newPipelineHarness(t, Tuning{PageSize: 200, MaxInFlight: 256, Linger: 50 * time.Millisecond, Patience: 2 * time.Second}, nil)
	for i := range 20 {
		h.due(fmt.Sprintf("wh_%02d", i), fmt.Sprintf("%s/w%02d", recv.srv.URL, i), 30)
	}
	h.run(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if total < 600 || float64(lateRejected)/float64(total) > 0.02 {
		t.Errorf("%d of %d attempts answered 429 after the first second (%d in all); want the host's limit to keep it under its capacity", lateRejected, total, rejected)
	}
	t.Logf("%d attempts, %d answered 429 (%d after the first second) in %s", total, rejected, lateRejected, time.Since(start).Round(time.Millisecond))
}

// TestPipeline_AnAccountsHungReceiverLeavesOthersTheHost: account 1's
// receiver holds every request at a host that account 2's webhook posts to
// as well; account 1 fills its own capacity at that host, and account 2's
// deliveries go at once (destinations are per account).
func TestPipeline_AnAccountsHungReceiverLeavesOthersTheHost(t *testing.T) {
	recv := newFakeReceiver(t, func(path string, _ int) (time.Duration, int) {
		if path == "/hung" {
			return time.Second, http.StatusNoContent
		}
		return 0, http.StatusNoContent
	})
	h := newPipelineHarness(t, Tuning{PageSize: 200, MaxInFlight: 256, Linger: 50 * time.Millisecond, Patience: 5 * time.Second}, nil)
	var hung []string
	for i := range 4 { // four webhooks: 64 attempts, more than the host's initial 16
		hung = append(hung, h.dueFor(1, fmt.Sprintf("wh_hung_%d", i), recv.srv.URL+"/hung", 16)...)
	}
	start := time.Now()
	var other []string
	go func() {
		time.Sleep(100 * time.Millisecond) // account 1 holds the host's first places
		other = h.dueFor(2, "wh_other", recv.srv.URL+"/other", 20)
	}()
	h.run(context.Background())
	for _, id := range other {
		at, ok := h.rec.at[id]
		if !ok {
			t.Fatalf("account 2's delivery %s not recorded", id)
		}
		if waited := at.Sub(start); waited > 700*time.Millisecond {
			t.Errorf("account 2's delivery %s recorded %s after the start: it waited for account 1's hung receiver", id, waited.Round(time.Millisecond))
		}
	}
	if len(h.rec.rec) != len(hung)+len(other) {
		t.Errorf("recorded %d of %d deliveries", len(h.rec.rec), len(hung)+len(other))
	}
}

// roomLimits gives each webhook a fixed room, and each destination its
// room by key if it has one (else 1000), and starts nothing.
type roomLimits map[string]int

func (l roomLimits) room(webhookID, _ string) int { return l[webhookID] }

func (l roomLimits) destinationRoom(key string) int {
	if room, ok := l[key]; ok {
		return room
	}
	return 1000
}

func (l roomLimits) tryStart(string, string) (attemptPermit, bool) { return nil, false }

func (l roomLimits) webhookRoom(webhookID string) int { return l[webhookID] }

func (l roomLimits) initial() int { return 16 } // the worker default

func (l roomLimits) ahead(string) int { return 0 }

func (l roomLimits) changed(iter.Seq[string]) []WebhookLimit                 { return nil }
func (l roomLimits) changedDestinations(iter.Seq[string]) []DestinationLimit { return nil }
func (l roomLimits) seed(LearnedLimits)                                      {}

// TestPipeline_RoomsListOnlyWhatTheDefaultGetsWrong: the rooms a claim is
// given name the webhooks the round has deliveries of and those whose
// room is not the claim's default (the initial limit): below it
// (throttled) or above it (a limit grown by a backlog whose attempts have
// all ended), not every quiet webhook the round has seen (each candidate
// of the claim is joined with the list).
func TestPipeline_RoomsListOnlyWhatTheDefaultGetsWrong(t *testing.T) {
	h := newPipelineHarness(t, Tuning{PageSize: 50}, roomLimits{"wh_busy": 20, "wh_quiet": 16, "wh_throttled": 2, "wh_grown": 48,
		"1 https://wh_quiet": 16})
	p := h.rs.newPipeline(context.Background(), h.claims.claim, time.Now().Add(time.Minute))
	for _, id := range []string{"wh_busy", "wh_quiet", "wh_throttled", "wh_grown"} {
		p.seen[id] = webhookDestination{clientURL: "https://" + id, key: "1 https://" + id}
	}
	p.flights[1] = &flight{c: deliveries.Claimed{ID: "wdl_1", Webhook: deliveries.WebhookTarget{ID: "wh_busy"}}}
	r := p.rooms()
	want := map[string]int{"wh_busy": 20, "wh_throttled": 2, "wh_grown": 48}
	if !maps.Equal(r.webhooks, want) {
		t.Errorf("webhook rooms %v, want %v", r.webhooks, want)
	}
	if _, ok := r.destinations["1 https://wh_quiet"]; ok || len(r.destinations) != 3 {
		t.Errorf("destination rooms %v, want wh_busy's, wh_throttled's and wh_grown's only", r.destinations)
	}
}

// TestPipeline_RoomsListADestinationWhoseRoomIsNotTheDefault: a
// destination the round has seen is listed when its room is not the
// claim's default, though every webhook of it is quiet and at the default
// (a spread burst's: one delivery each, answered): grown, the claim takes
// its room, not 16 at a time; shrunk, no more than its room.
func TestPipeline_RoomsListADestinationWhoseRoomIsNotTheDefault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		room   int
		listed bool
	}{
		{"grown", 512, true},
		{"throttled", 4, true},
		{"full", 0, true},
		{"at the default", 16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const dest = "1 https://spread.example.com"
			limits := roomLimits{dest: tc.room}
			h := newPipelineHarness(t, Tuning{PageSize: 50}, limits)
			p := h.rs.newPipeline(context.Background(), h.claims.claim, time.Now().Add(time.Minute))
			for i := range 3 {
				id := fmt.Sprintf("wh_%d", i)
				limits[id] = 16
				p.seen[id] = webhookDestination{clientURL: "https://spread.example.com/" + id, key: dest}
			}
			r := p.rooms()
			if len(r.webhooks) != 0 {
				t.Errorf("webhook rooms %v, want none (each quiet at the default)", r.webhooks)
			}
			room, ok := r.destinations[dest]
			if ok != tc.listed || (ok && room != tc.room) {
				t.Errorf("destination rooms %v, want %s listed %v with room %d", r.destinations, dest, tc.listed, tc.room)
			}
		})
	}
}
