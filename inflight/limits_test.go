package inflight_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/inflight"
)

var t0 = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

// acquireAll takes permits for t until TryAcquire says no.
func acquireAll(l *inflight.Limits, t inflight.Target, now time.Time) []inflight.Permit {
	var permits []inflight.Permit
	for {
		p, ok := l.TryAcquire(t, now)
		if !ok {
			return permits
		}
		permits = append(permits, p)
	}
}

func TestLimits_Bounds(t *testing.T) {
	tests := []struct {
		name   string
		opts   inflight.Options
		target inflight.Target
		want   int
	}{
		{"InitialLimitIs16", inflight.Options{}, inflight.Target{Webhook: "a", Destination: "d"}, 16},
		{"CallerCapBoundsTheWebhook", inflight.Options{}, inflight.Target{Webhook: "a", Destination: "d", Cap: 5}, 5},
		{"InitialLimitAtMostTheMax", inflight.Options{MaxLimit: 4}, inflight.Target{Webhook: "a", Destination: "d"}, 4},
		{"OperatorInitialLimit", inflight.Options{InitialLimit: 32}, inflight.Target{Webhook: "a", Destination: "d"}, 32},
		{"DestinationMaxBoundsTheWebhook", inflight.Options{MaxDestinationLimit: 3}, inflight.Target{Webhook: "a", Destination: "d"}, 3},
		{"DestinationInitialBoundsTheWebhook", inflight.Options{InitialDestinationLimit: 6}, inflight.Target{Webhook: "a", Destination: "d"}, 6},
		{"DestinationInitialAtMostItsMax", inflight.Options{InitialLimit: 32, InitialDestinationLimit: 100, MaxDestinationLimit: 20}, inflight.Target{Webhook: "a", Destination: "d"}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := inflight.New(tt.opts)
			if got := l.Available(tt.target); got != tt.want {
				t.Errorf("Available before any attempt = %d, want %d", got, tt.want)
			}
			if got := len(acquireAll(l, tt.target, t0)); got != tt.want {
				t.Errorf("acquired %d, want %d", got, tt.want)
			}
			if got := l.Available(tt.target); got != 0 {
				t.Errorf("Available when full = %d, want 0", got)
			}
		})
	}
}

// TestLimits_CallerCapHoldsWhileTheLimitGrows: a webhook capped at 10
// behind a receiver that would take the max never has more than 10 in
// flight.
func TestLimits_CallerCapHoldsWhileTheLimitGrows(t *testing.T) {
	hook := &simWebhook{target: inflight.Target{Webhook: "wh_1", Destination: "d", Cap: 10}, backlog: -1}
	s := newSim(t, inflight.Options{}, flat(100*time.Millisecond), hook)
	s.run(10 * time.Second)
	if s.maxHost != 10 {
		t.Errorf("at most %d in flight, want 10", s.maxHost)
	}
	if snap, _ := s.limits.Snapshot("wh_1"); snap.Limit != 10 {
		t.Errorf("limit %d, want the cap 10", snap.Limit)
	}
	// The cap is the caller's now: lifted, the limit grows on.
	hook.target.Cap = 0
	s.run(20 * time.Second)
	if snap, _ := s.limits.Snapshot("wh_1"); snap.Limit != inflight.DefaultMaxLimit {
		t.Errorf("limit %d once the cap is lifted, want %d", snap.Limit, inflight.DefaultMaxLimit)
	}
}

// TestLimits_DestinationIsShared: two webhooks on one destination share
// its slots (a new destination starts at the initial limit too); a
// webhook elsewhere does not.
func TestLimits_DestinationIsShared(t *testing.T) {
	l := inflight.New(inflight.Options{InitialDestinationLimit: 16})
	a := inflight.Target{Webhook: "a", Destination: "https://h:443", Cap: 10}
	b := inflight.Target{Webhook: "b", Destination: "https://h:443"}
	c := inflight.Target{Webhook: "c", Destination: "https://other:443"}
	held := acquireAll(l, a, t0)
	if len(held) != 10 {
		t.Fatalf("a acquired %d, want its cap 10", len(held))
	}
	if got := l.Available(b); got != 6 {
		t.Errorf("Available(b) = %d, want the destination's 6 left", got)
	}
	if got := len(acquireAll(l, b, t0)); got != 6 {
		t.Errorf("b acquired %d, want 6", got)
	}
	if got := l.Available(c); got != 16 {
		t.Errorf("Available(c) = %d, want 16", got)
	}
	// A failure (500) frees its slot and teaches neither limit anything.
	held[0].Done(inflight.Outcome{Class: inflight.Failed, Latency: time.Millisecond})
	if got := l.Available(b); got != 1 {
		t.Errorf("Available(b) after one of a's ended = %d, want 1", got)
	}
	d, _ := l.DestinationSnapshot("https://h:443")
	if d.InFlight != 15 {
		t.Errorf("destination in flight %d, want 15", d.InFlight)
	}
}

// TestLimits_ANewDestinationStartsAtTwoWebhooks: cold webhooks on one
// host probe it with one webhook's initial limit (16), whoever asks (on
// 90d483f two rounds reaching a new host at once started 32: a host that
// refuses above 8 refused 24); from its first answer on they share two
// webhooks' initial limits (32), not one's.
func TestLimits_ANewDestinationStartsAtTwoWebhooks(t *testing.T) {
	l := inflight.New(inflight.Options{})
	dest := "https://h:443"
	if got := l.DestinationAvailable(dest); got != 16 {
		t.Errorf("a new host: DestinationAvailable = %d, want the probe's 16", got)
	}
	var probe []inflight.Permit
	for i := range 8 {
		probe = append(probe, acquireAll(l, inflight.Target{Webhook: fmt.Sprintf("wh_%d", i), Destination: dest}, t0)...)
	}
	if len(probe) != 16 {
		t.Fatalf("8 new webhooks on one new host acquired %d before it answered, want 16", len(probe))
	}
	// An attempt that never went out is no answer: still probing.
	probe[0].Done(inflight.Outcome{Class: inflight.NotSent})
	if got := len(acquireAll(l, inflight.Target{Webhook: "wh_0", Destination: dest}, t0)); got != 1 {
		t.Fatalf("after an attempt not sent: %d more started, want its place back only", got)
	}
	probe[1].Done(inflight.Outcome{Class: inflight.Failed, Latency: time.Millisecond})
	held := len(probe) - 1
	for i := range 8 {
		held += len(acquireAll(l, inflight.Target{Webhook: fmt.Sprintf("wh_%d", i), Destination: dest}, t0))
	}
	if held != 32 {
		t.Errorf("after the host's first answer the webhooks hold %d, want 32 (2 x 16)", held)
	}
	if got := l.Available(inflight.Target{Webhook: "wh_9", Destination: "https://other:443"}); got != 16 {
		t.Errorf("a new webhook on another host: Available = %d, want its own 16", got)
	}
}

// TestLimits_OutcomesThatSayNothingMoveNoLimit: NotSent and Failed free
// the slot and leave the limit, however many there are.
func TestLimits_OutcomesThatSayNothingMoveNoLimit(t *testing.T) {
	for _, class := range []inflight.Class{inflight.NotSent, inflight.Failed} {
		t.Run(class.String(), func(t *testing.T) {
			l := inflight.New(inflight.Options{})
			target := inflight.Target{Webhook: "a", Destination: "d"}
			for range 100 {
				for _, p := range acquireAll(l, target, t0) {
					p.Done(inflight.Outcome{Class: class, Latency: time.Second})
				}
			}
			snap, _ := l.Snapshot("a")
			if snap.Limit != 16 || snap.InFlight != 0 {
				t.Errorf("limit %d with %d in flight, want 16 with 0", snap.Limit, snap.InFlight)
			}
		})
	}
	inflight.Permit{}.Done(inflight.Outcome{Class: inflight.Succeeded}) // the zero Permit: no panic
}

// TestLimits_RejectionsShrinkOncePerGeneration: 16 attempts answered 429
// together are one signal, not 16.
func TestLimits_RejectionsShrinkOncePerGeneration(t *testing.T) {
	l := inflight.New(inflight.Options{})
	target := inflight.Target{Webhook: "a", Destination: "d"}
	for _, p := range acquireAll(l, target, t0) {
		p.Done(inflight.Outcome{Class: inflight.Rejected, Latency: time.Millisecond})
	}
	snap, _ := l.Snapshot("a")
	// The first rejected attempt started with 1 in flight: 1 x 0.7 -> 1.
	if snap.Limit != 1 || snap.Rejected != 16 {
		t.Errorf("limit %d after %d rejections, want 1 after 16", snap.Limit, snap.Rejected)
	}
	l = inflight.New(inflight.Options{})
	permits := acquireAll(l, target, t0)
	for i := len(permits) - 1; i >= 0; i-- { // the 16th first: it started with 16 in flight
		permits[i].Done(inflight.Outcome{Class: inflight.Rejected, Latency: time.Millisecond})
	}
	if snap, _ := l.Snapshot("a"); snap.Limit != 11 {
		t.Errorf("limit %d, want 16 x 0.7 = 11", snap.Limit)
	}
}

// TestLimits_EvictsIdleKeys: 100,000 webhooks seen once each; after
// IdleTTL the next calls evict them as they go, and a key in flight stays.
func TestLimits_EvictsIdleKeys(t *testing.T) {
	l := inflight.New(inflight.Options{IdleTTL: time.Minute, MaxKeys: 1_000_000})
	busy, _ := l.TryAcquire(inflight.Target{Webhook: "busy", Destination: "d-busy"}, t0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		target := inflight.Target{Webhook: "wh_" + strconv.Itoa(i), Destination: "d_" + strconv.Itoa(i%100)}
		p, _ := l.TryAcquire(target, t0.Add(time.Duration(i)*time.Microsecond))
		p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: time.Millisecond})
	}
	if got := l.Keys(); got != 100_102 {
		t.Fatalf("%d keys within the TTL, want 100,102", got)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("%d bytes of heap a key", (after.HeapAlloc-before.HeapAlloc)/100_102)
	later := t0.Add(2 * time.Minute)
	for i := range 60_000 { // a quieter minute: 60,000 attempts to one webhook
		p, _ := l.TryAcquire(inflight.Target{Webhook: "steady", Destination: "d-steady"}, later.Add(time.Duration(i)*time.Millisecond))
		p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: time.Millisecond})
	}
	if got := l.Keys(); got != 4 {
		t.Errorf("%d keys after the TTL, want 4 (steady, busy and their destinations)", got)
	}
	if _, ok := l.Snapshot("wh_5"); ok {
		t.Error("an idle webhook is still held after the TTL")
	}
	if snap, ok := l.Snapshot("busy"); !ok || snap.InFlight != 1 {
		t.Errorf("the webhook in flight: %+v, %v; want held with 1 in flight", snap, ok)
	}
	busy.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: 3 * time.Minute})
}

// TestLimits_MaxKeysBoundsMemory: beyond MaxKeys the least recently used
// idle key goes, TTL or not.
func TestLimits_MaxKeysBoundsMemory(t *testing.T) {
	l := inflight.New(inflight.Options{MaxKeys: 1000})
	for i := range 10_000 {
		key := strconv.Itoa(i)
		p, _ := l.TryAcquire(inflight.Target{Webhook: "wh_" + key, Destination: "d"}, t0)
		p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: time.Millisecond})
	}
	if got := l.Keys(); got > 1001 {
		t.Errorf("%d keys, want at most 1,001", got)
	}
	if _, ok := l.Snapshot("wh_9999"); !ok {
		t.Error("the most recent webhook was evicted")
	}
}

func TestDestination(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://Example.com/hooks/a", "https://example.com:443"},
		{"https://example.com:443/hooks/b?x=1", "https://example.com:443"},
		{"http://example.com/a", "http://example.com:80"},
		{"http://example.com:8080/a", "http://example.com:8080"},
		{"https://[2001:db8::1]/a", "https://[2001:db8::1]:443"},
		{"https://user:pw@example.com/a", "https://example.com:443"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := inflight.Destination(tt.url); got != tt.want {
			t.Errorf("Destination(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestClassOfStatus(t *testing.T) {
	tests := []struct {
		code int
		want inflight.Class
	}{
		{200, inflight.Succeeded}, {204, inflight.Succeeded},
		{429, inflight.Rejected}, {503, inflight.Rejected}, {502, inflight.Rejected}, {504, inflight.Rejected},
		{500, inflight.Failed}, {400, inflight.Failed}, {404, inflight.Failed}, {410, inflight.Failed}, {301, inflight.Failed},
	}
	for _, tt := range tests {
		if got := inflight.ClassOfStatus(tt.code); got != tt.want {
			t.Errorf("ClassOfStatus(%d) = %s, want %s", tt.code, got, tt.want)
		}
	}
}

// TestLimits_ADestinationGrowsFromAClaimedBatch: a claim starts a
// destination's whole limit at once, across its cold webhooks. When all of
// them answer 2xx, each counts as evidence for more (the limit was full
// while they were in flight), so the destination leaves its first round
// trip at four times its initial limit (slow start adds 3 per success to
// a destination). Judged against the limit at the answer, only the attempts
// that started last counted; judged by the load at each one's own start,
// only the 17 that found half the limit in flight.
func TestLimits_ADestinationGrowsFromAClaimedBatch(t *testing.T) {
	l := inflight.New(inflight.Options{})
	answered(t, l, "d") // past the first contact's probe
	var permits []inflight.Permit
	for i := range 64 {
		p, ok := l.TryAcquire(inflight.Target{Webhook: "wh_" + strconv.Itoa(i), Destination: "d"}, t0)
		if !ok {
			break
		}
		permits = append(permits, p)
	}
	if len(permits) != 32 {
		t.Fatalf("started %d at the cold destination, want its initial 32", len(permits))
	}
	for _, p := range permits {
		p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: 200 * time.Millisecond})
	}
	snap, _ := l.DestinationSnapshot("d")
	t.Logf("destination limit after one round trip of 32 successes: %d", snap.Limit)
	// Every one counts: 32 + 3 x 32.
	if snap.Limit != 128 {
		t.Errorf("destination limit %d, want 128", snap.Limit)
	}
}

// TestLimits_GrowOnlyWhenUsed: an answer is evidence for more only if at
// least half the limit was in flight at some start while its attempt was
// (its own start included); a webhook sent one attempt at a time keeps its
// limit, and so does a destination its webhook fills only a quarter of.
func TestLimits_GrowOnlyWhenUsed(t *testing.T) {
	target := inflight.Target{Webhook: "wh", Destination: "d"}
	ok200 := inflight.Outcome{Class: inflight.Succeeded, Latency: 200 * time.Millisecond}
	tests := []struct {
		name                 string
		run                  func(l *inflight.Limits)
		webhook, destination int
	}{
		{"OneAtATime", func(l *inflight.Limits) {
			for range 100 {
				p, _ := l.TryAcquire(target, t0)
				p.Done(ok200)
			}
		}, 16, 32},
		{"AnEarlyAttemptOfABatchThatFilledHalfTheWebhook", func(l *inflight.Limits) {
			first, _ := l.TryAcquire(target, t0)
			for range 7 { // 8 in flight: half the webhook's 16, a quarter of the destination's 32
				l.TryAcquire(target, t0.Add(time.Millisecond))
			}
			first.Done(ok200)
		}, 18, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := inflight.New(inflight.Options{})
			tt.run(l)
			hook, _ := l.Snapshot("wh")
			dest, _ := l.DestinationSnapshot("d")
			if hook.Limit != tt.webhook || dest.Limit != tt.destination {
				t.Errorf("webhook limit %d, destination limit %d; want %d and %d", hook.Limit, dest.Limit, tt.webhook, tt.destination)
			}
		})
	}
}

// answered has destination answer one attempt (a Failed answer, which
// moves no limit), so it is no longer probed.
func answered(t *testing.T, l *inflight.Limits, destination string) {
	t.Helper()
	p, ok := l.TryAcquire(inflight.Target{Webhook: "wh_probe", Destination: destination}, t0)
	if !ok {
		t.Fatal("no place for the probe")
	}
	p.Done(inflight.Outcome{Class: inflight.Failed, Latency: time.Millisecond})
}
