package listeners_test

import (
	"context"
	"errors"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/listeners"
)

// TestNext_BoundsOpenPolls: a listener and an account may have only so
// many long polls open at once, across replicas; a poll that answered or
// whose client left no longer counts.
func TestNext_BoundsOpenPolls(t *testing.T) {
	f := newFixture(t)
	limits := listeners.Limits{PollsPerListener: 2, PollsPerAccount: 3}
	r1, r2 := f.newReplicaWith(5*time.Second, limits), f.newReplicaWith(5*time.Second, limits)
	first, _ := f.open(r1, "first")
	second, _ := f.open(r1, "second")
	a := r1.access(t, f.writer, f.account)

	// Polls that answered do not count against the bound.
	for range 4 {
		if att, err := r1.svc.Next(context.Background(), a, first.Listener.ID, 0); att != nil || err != nil {
			t.Fatalf("Next(wait 0) = %+v, %v; want nothing", att, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaving, leave := context.WithCancel(ctx)
	left := poll(leaving, t, r1, f, first.Listener.ID, 20*time.Second)
	poll(ctx, t, r2, f, first.Listener.ID, 20*time.Second)
	waitOpenPolls(t, f, first.Listener.ID, 2)
	if _, err := r2.svc.Next(ctx, a, first.Listener.ID, 20*time.Second); webhooks.ErrorCode(err) != webhooks.ETOOMANY {
		t.Fatalf("a third poll of one listener = %v; want too many", err)
	}
	poll(ctx, t, r1, f, second.Listener.ID, 20*time.Second)
	waitOpenPolls(t, f, second.Listener.ID, 1)
	if _, err := r1.svc.Next(ctx, a, second.Listener.ID, 20*time.Second); webhooks.ErrorCode(err) != webhooks.ETOOMANY {
		t.Fatalf("a fourth poll of the account = %v; want too many", err)
	}
	leave()
	if p := <-left; !errors.Is(p.err, context.Canceled) {
		t.Fatalf("Next after its client left = %+v, %v", p.att, p.err)
	}
	poll(ctx, t, r2, f, second.Listener.ID, 20*time.Second)
	waitOpenPolls(t, f, second.Listener.ID, 2)
}

// TestRelay_BoundsHeldAttempts: the relay holds only so many attempts for
// an account's listeners at once; the next is refused at once (a 429 the
// worker retries), and one answered makes room.
func TestRelay_BoundsHeldAttempts(t *testing.T) {
	f := newFixture(t)
	r := f.newReplicaWith(3*time.Second, listeners.Limits{HeldPerAccount: 2})
	o, token := f.open(r, "busy")
	a := r.access(t, f.writer, f.account)
	next := poll(context.Background(), t, r, f, o.Listener.ID, 10*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	taken := relayAsync(r, token, signed(o.Secret, "wdl_0000000000000000000000000a", body, time.Now()), body)
	att := attemptOf(t, <-next)
	// The listener counts as polling for a moment after its poll answered:
	// this one is held, and nobody takes it.
	held := relayAsync(r, token, signed(o.Secret, "wdl_0000000000000000000000000b", body, time.Now()), body)
	waitHeld(t, f, 2)
	_, err := r.svc.Relay(context.Background(), token, signed(o.Secret, "wdl_0000000000000000000000000c", body, time.Now()), body)
	if webhooks.ErrorCode(err) != webhooks.ETOOMANY {
		t.Fatalf("a third held attempt = %v; want too many", err)
	}
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	if res := <-taken; res.err != nil || res.res.Outcome != listeners.RelayAnswered {
		t.Fatalf("Relay = %+v, %v", res.res, res.err)
	}
	room := relayAsync(r, token, signed(o.Secret, "wdl_0000000000000000000000000d", body, time.Now()), body)
	waitHeld(t, f, 2)
	for _, done := range []<-chan relayed{held, room} {
		if res := <-done; res.err != nil || res.res.Outcome != listeners.RelayNotListening {
			t.Fatalf("an attempt nobody took = %+v, %v; want RelayNotListening", res.res, res.err)
		}
	}
}

// waitHeld waits until the relay holds n attempts.
func waitHeld(t *testing.T, f *fixture, n int) {
	t.Helper()
	var held int
	for range 250 {
		if err := f.db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM webhook_listener_attempts WHERE answered_at IS NULL AND closed_at IS NULL").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the relay holds %d attempts, want %d", held, n)
}
