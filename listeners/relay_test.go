package listeners_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/listeners"
)

// polled is what one long poll returned.
type polled struct {
	att *listeners.Attempt
	err error
}

// poll runs one long poll of the listener in the background; its result
// arrives on the channel.
func poll(ctx context.Context, t *testing.T, r *replica, f *fixture, listenerID string, wait time.Duration) <-chan polled {
	t.Helper()
	a := r.access(t, f.writer, f.account)
	out := make(chan polled, 1)
	go func() {
		att, err := r.svc.Next(ctx, a, listenerID, wait)
		out <- polled{att, err}
	}()
	return out
}

// attemptOf is the attempt a poll got; the test fails when it got none.
func attemptOf(t *testing.T, p polled) *listeners.Attempt {
	t.Helper()
	if p.err != nil || p.att == nil {
		t.Fatalf("Next = %+v, %v; want an attempt", p.att, p.err)
	}
	return p.att
}

// TestRelay_OneListenLeavingLeavesTheOtherListening: two `listen`s of one
// name, and the client of one goes away (Ctrl-C): the relay still hands
// deliveries to the other, rather than answering "nobody listening".
func TestRelay_OneListenLeavingLeavesTheOtherListening(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "two terminals")
	a := r.access(t, f.writer, f.account)

	leaving, leave := context.WithCancel(context.Background())
	left := poll(leaving, t, r, f, o.Listener.ID, 20*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	staying := poll(context.Background(), t, r, f, o.Listener.ID, 20*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 2)
	leave()
	<-left
	waitOpenPolls(t, f, o.Listener.ID, 1)

	done := relayAsync(r, token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)
	var att *listeners.Attempt
	select {
	case p := <-staying:
		att = attemptOf(t, p)
	case res := <-done:
		t.Fatalf("Relay = %+v, %v while a listen still polls; want the attempt handed to it", res.res, res.err)
	}
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 204}); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if res := <-done; res.err != nil || res.res.Outcome != listeners.RelayAnswered || res.res.Answer.StatusCode != 204 {
		t.Fatalf("Relay = %+v, %v; want the answer 204", res.res, res.err)
	}
}

// TestRelay_AnsweredPollCountsForTheGraceOnly: a poll that answered early
// keeps the listener polled for the 5 s its CLI takes to poll again, not
// for the rest of its wait: a listen killed while it forwards is "nobody
// listening" 5 s later.
func TestRelay_AnsweredPollCountsForTheGraceOnly(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(time.Second)
	o, token := f.open(r, "killed while forwarding")
	a := r.access(t, f.writer, f.account)
	next := poll(context.Background(), t, r, f, o.Listener.ID, 25*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	done := relayAsync(r, token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)
	att := attemptOf(t, <-next)
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	<-done
	// The CLI is killed now, before it polls again.
	time.Sleep(5*time.Second + 500*time.Millisecond)
	res, err := r.svc.Relay(context.Background(), token, signed(o.Secret, "wdl_1123456789abcdef0123456789", body, time.Now()), body)
	if err != nil || res.Outcome != listeners.RelayNotListening {
		t.Fatalf("Relay 5.5 s after the only poll answered = %+v, %v; want RelayNotListening", res, err)
	}
	// Answered at once: not held for a listener that is gone.
	var held int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_listener_attempts WHERE delivery_id = $1", "wdl_1123456789abcdef0123456789").Scan(&held); err != nil || held != 0 {
		t.Fatalf("the relay held the attempt for a listener gone 5.5 s (%d rows, %v); want it answered at once", held, err)
	}
}

// TestRelay_RefusesTheSameRequestTwice: a captured delivery cannot be
// replayed to the listener, neither while it listens nor after a 503.
func TestRelay_RefusesTheSameRequestTwice(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "replayed")
	a := r.access(t, f.writer, f.account)

	// Nobody listening: the second is a replay all the same.
	unheard := signed(o.Secret, "wdl_0000000000000000000000000a", body, time.Now())
	if res, err := r.svc.Relay(context.Background(), token, unheard, body); err != nil || res.Outcome != listeners.RelayNotListening {
		t.Fatalf("first Relay = %+v, %v; want RelayNotListening", res, err)
	}
	if _, err := r.svc.Relay(context.Background(), token, unheard, body); webhooks.ErrorCode(err) != webhooks.ECONFLICT {
		t.Fatalf("the same request again = %v; want a conflict", err)
	}

	// Listening: the first reaches the listener, the copy does not, even
	// with another Webhook-Attempt (which is not signed).
	captured := signed(o.Secret, "wdl_0000000000000000000000000b", body, time.Now())
	next := poll(context.Background(), t, r, f, o.Listener.ID, 10*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	done := relayAsync(r, token, captured.Clone(), body)
	att := attemptOf(t, <-next)
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200, Body: []byte("secret answer")}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.err != nil || res.res.Outcome != listeners.RelayAnswered {
		t.Fatalf("first Relay = %+v, %v", res.res, res.err)
	}
	again := poll(context.Background(), t, r, f, o.Listener.ID, 2*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	for _, attempt := range []string{"2", "3"} {
		h := captured.Clone()
		h.Set("Webhook-Attempt", attempt)
		res, err := r.svc.Relay(context.Background(), token, h, body)
		if webhooks.ErrorCode(err) != webhooks.ECONFLICT {
			t.Fatalf("replay (Webhook-Attempt %s) = %+v, %v; want a conflict", attempt, res, err)
		}
	}
	if p := <-again; p.att != nil || p.err != nil {
		t.Fatalf("the listener was handed a replay: %+v, %v", p.att, p.err)
	}
}

// TestRelay_StoresHeadersSealed: an attempt's headers carry the webhook's
// secret header values; while it waits for the listener, no column of its
// row holds them in clear, and the listener still gets them.
func TestRelay_StoresHeadersSealed(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "sealed")
	a := r.access(t, f.writer, f.account)
	const secretValue = "sk_live_do-not-store-me-in-clear"
	h := signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now())
	h.Set("X-Api-Key", secretValue)

	next := poll(context.Background(), t, r, f, o.Listener.ID, 10*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	done := relayAsync(r, token, h, body)
	att := attemptOf(t, <-next)
	if att.Header.Get("X-Api-Key") != secretValue {
		t.Fatalf("the listener got %+v; want the attempt with X-Api-Key", att)
	}
	var rows []string
	res, err := f.db.Pool.Query(context.Background(), "SELECT row_to_json(a)::text FROM webhook_listener_attempts a")
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var row string
		if err := res.Scan(&row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 1 {
		t.Fatalf("attempt rows = %d, want 1", len(rows))
	}
	if strings.Contains(rows[0], secretValue) || strings.Contains(rows[0], o.Secret) {
		t.Fatalf("the attempt's row holds a secret in clear: %s", rows[0])
	}
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestRelay_OddTextIsNoInternalError: a genuine delivery whose eventType
// holds a NUL, or whose delivery id is not UTF-8, is relayed; the display
// fields are cleaned, the body is exact.
func TestRelay_OddTextIsNoInternalError(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "odd text")
	a := r.access(t, f.writer, f.account)
	odd := []byte(`{"accountId":1,"eventType":"job.run.\u0000completed","data":{}}`)
	h := signed(o.Secret, "wdl_0123456789abcdef0123456789", odd, time.Now())
	h.Set("Webhook-Delivery-Id", "wdl_\xff\xfe")

	next := poll(context.Background(), t, r, f, o.Listener.ID, 10*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	done := relayAsync(r, token, h, odd)
	var att *listeners.Attempt
	select {
	case p := <-next:
		att = attemptOf(t, p)
	case res := <-done:
		t.Fatalf("Relay = %+v, %v (code %q); want it handed to the listener", res.res, res.err, webhooks.ErrorCode(res.err))
	}
	if string(att.Body) != string(odd) || strings.ContainsRune(att.EventType, 0) || att.EventType == "" || !utf8.ValidString(att.DeliveryID) {
		t.Fatalf("attempt = %+v", att)
	}
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.err != nil {
		t.Fatalf("Relay = %v", res.err)
	}
}

// TestRelay_PassesTheReceiversDirectiveBack: a local endpoint's
// Webhook-Delivery directive reaches the worker as from any receiver.
func TestRelay_PassesTheReceiversDirectiveBack(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "directive")
	a := r.access(t, f.writer, f.account)
	next := poll(context.Background(), t, r, f, o.Listener.ID, 10*time.Second)
	waitOpenPolls(t, f, o.Listener.ID, 1)
	done := relayAsync(r, token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)
	att := attemptOf(t, <-next)
	if err := r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{
		StatusCode: 410, Header: http.Header{"Webhook-Delivery": {"disable"}, "Retry-After": {"60"}, "X-Other": {"dropped"}},
	}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.res.Answer.Header.Get("Webhook-Delivery") != "disable" || res.res.Answer.Header.Get("Retry-After") != "60" || res.res.Answer.Header.Get("X-Other") != "" {
		t.Fatalf("Relay = %+v, %v; want the answer with Webhook-Delivery: disable and Retry-After, without X-Other", res.res, res.err)
	}
}
