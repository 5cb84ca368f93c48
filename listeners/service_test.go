package listeners_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/listeners"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

const relayBase = "http://127.0.0.1:1"

// replica is one API process's listener service, on a pool of its own.
type replica struct {
	svc  *listeners.Service
	subs *subscriptions.Service
}

// fixture is a database, a secret box and an account with a writer.
type fixture struct {
	t       *testing.T
	db      *testenv.Database
	box     *secrets.Box
	account webhooks.Account
	writer  *webhooks.Principal
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d := testenv.NewDatabase(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: d, box: box}
	f.account, f.writer = f.newAccount("developer")
	return f
}

// newAccount creates a Team account and a member with license.
func (f *fixture) newAccount(license string) (webhooks.Account, *webhooks.Principal) {
	f.t.Helper()
	acct, err := identity.NewStore(f.db.Pool).CreateAccount(context.Background(), webhooks.NewID("account "), webhooks.PlanTeam)
	if err != nil {
		f.t.Fatal(err)
	}
	return acct, &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: acct, License: license, PermissionSets: []string{"member"}},
	}}
}

// newReplica starts a listener service as one API process would, with the
// attempt timeout given.
func (f *fixture) newReplica(attemptTimeout time.Duration) *replica {
	f.t.Helper()
	return f.newReplicaWith(attemptTimeout, listeners.Limits{})
}

// newReplicaWith is newReplica with limits (zero fields: the defaults).
func (f *fixture) newReplicaWith(attemptTimeout time.Duration, limits listeners.Limits) *replica {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	pool, err := db.Open(ctx, f.db.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(pool.Close)
	subs, err := subscriptions.NewService(subscriptions.NewStore(pool, f.box), &netguard.Policy{Internal: []string{webhooks.RelayPrefix(relayBase)}})
	if err != nil {
		f.t.Fatal(err)
	}
	svc, err := listeners.NewService(ctx, pool, f.box, subs, listeners.Options{
		RelayBaseURL: relayBase, AttemptTimeout: attemptTimeout, Limits: limits, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return &replica{svc: svc, subs: subs}
}

func (r *replica) access(t *testing.T, p *webhooks.Principal, acct webhooks.Account) subscriptions.Access {
	t.Helper()
	a, err := r.subs.Authorize(p, strconv.FormatInt(acct.ID, 10), false)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// open opens a listener called name for the fixture's writer.
func (f *fixture) open(r *replica, name string) (listeners.Opened, string) {
	f.t.Helper()
	o, err := r.svc.Open(context.Background(), r.access(f.t, f.writer, f.account), listeners.OpenInput{Name: name, EventTypes: webhooks.EventTypes})
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	sub, err := r.subs.Get(context.Background(), r.access(f.t, f.writer, f.account), o.Listener.SubscriptionID)
	if err != nil {
		f.t.Fatal(err)
	}
	token := sub.ClientURL[len(webhooks.RelayPrefix(relayBase)):]
	return o, token
}

// signed is an attempt as the worker sends it, signed with secret at t.
func signed(secret, deliveryID string, body []byte, at time.Time) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "jobhooks/1.0")
	h.Set("Authorization", webhooks.Sign(secret, body))
	h.Set("Webhook-Delivery-Id", deliveryID)
	h.Set("Webhook-Attempt", "2")
	h.Set("Webhook-Id", deliveryID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("Webhook-Signature", webhooks.SignStandard(secret, deliveryID, at, body))
	h.Set("Connection", "keep-alive")
	h.Set("X-Forwarded-For", "10.0.0.9")
	return h
}

var body = []byte(`{"accountId":1,"eventType":"job.run.completed","data":{"jobId":"42"}}`)

type relayed struct {
	res listeners.RelayResult
	err error
}

func relayAsync(r *replica, token string, h http.Header, b []byte) <-chan relayed {
	out := make(chan relayed, 1)
	go func() {
		res, err := r.svc.Relay(context.Background(), token, h, b)
		out <- relayed{res, err}
	}()
	return out
}

// TestRelay_HandsOffBetweenReplicas: the worker's POST held by one replica
// reaches a long poll served by another, with the exact body and the
// delivery's headers (not the connection's), and the answer recorded there
// is what the first answers the worker.
func TestRelay_HandsOffBetweenReplicas(t *testing.T) {
	f := newFixture(t)
	holder, poller := f.newReplica(5*time.Second), f.newReplica(5*time.Second)
	o, token := f.open(poller, "two replicas")
	a := poller.access(t, f.writer, f.account)

	next := make(chan *listeners.Attempt, 1)
	go func() {
		att, err := poller.svc.Next(context.Background(), a, o.Listener.ID, 10*time.Second)
		if err != nil {
			t.Errorf("Next: %v", err)
		}
		next <- att
	}()
	waitPolling(t, f.db.Pool, o.Listener.ID)
	done := relayAsync(holder, token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)

	att := <-next
	if att == nil {
		t.Fatal("Next returned nothing; want the relayed attempt")
	}
	if string(att.Body) != string(body) || att.DeliveryID != "wdl_0123456789abcdef0123456789" || att.EventType != "job.run.completed" || att.Attempt != 2 {
		t.Fatalf("attempt = %+v", att)
	}
	if !webhooks.VerifySignature(o.Secret, att.Body, att.Header.Get("Authorization")) || att.Header.Get("Webhook-Signature") == "" {
		t.Fatalf("attempt headers lack the signatures: %v", att.Header)
	}
	if att.Header.Get("Connection") != "" || att.Header.Get("X-Forwarded-For") != "" {
		t.Fatalf("attempt headers carry the connection's: %v", att.Header)
	}
	if err := poller.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{
		StatusCode: 202, Header: http.Header{"Content-Type": {"text/plain"}, "X-Local": {"dropped"}}, Body: []byte("taken"), Duration: 7 * time.Millisecond,
	}); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.res.Outcome != listeners.RelayAnswered || r.res.Answer.StatusCode != 202 || string(r.res.Answer.Body) != "taken" ||
			r.res.Answer.Header.Get("Content-Type") != "text/plain" || r.res.Answer.Header.Get("X-Local") != "" {
			t.Fatalf("Relay = %+v, %v; want the answer 202 taken (text/plain)", r.res, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Relay did not return within 10s of the answer")
	}
	err := poller.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200})
	if webhooks.ErrorCode(err) != webhooks.ECONFLICT {
		t.Fatalf("second Answer = %v, want a conflict", err)
	}
}

// waitPolling waits until a long poll of the listener is under way.
func waitPolling(t *testing.T, pool *pgxpool.Pool, listenerID string) {
	t.Helper()
	for range 200 {
		var polling bool
		if err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM webhook_listener_polls WHERE listener_id = $1 AND ended_at IS NULL AND polling_until > now())", listenerID).Scan(&polling); err != nil {
			t.Fatal(err)
		}
		if polling {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the listener never polled")
}

// TestRelay_WithoutAPollerAnswersAtOnce: nobody listening is a failed
// attempt right away, not a held connection; a poll that ended because its
// client went away counts as nobody listening.
func TestRelay_WithoutAPollerAnswersAtOnce(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "nobody")
	res, err := r.svc.Relay(context.Background(), token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)
	if err != nil || res.Outcome != listeners.RelayNotListening {
		t.Fatalf("Relay = %+v, %v; want RelayNotListening", res, err)
	}
	// Answered without holding the attempt for a listener.
	var held int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_listener_attempts").Scan(&held); err != nil || held != 0 {
		t.Fatalf("attempts stored with nobody listening: %d (%v), want none", held, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := r.svc.Next(ctx, r.access(t, f.writer, f.account), o.Listener.ID, 20*time.Second)
		gone <- err
	}()
	waitPolling(t, f.db.Pool, o.Listener.ID)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after its client left = %v", err)
	}
	res, err = r.svc.Relay(context.Background(), token, signed(o.Secret, "wdl_1123456789abcdef0123456789", body, time.Now()), body)
	if err != nil || res.Outcome != listeners.RelayNotListening {
		t.Fatalf("Relay after the poller left = %+v, %v; want RelayNotListening", res, err)
	}
}

// TestRelay_TakenButNotAnswered: a listener that takes an attempt and does
// not answer before the hold ends leaves the relay to answer it (no
// answer), and its late answer is refused as too late.
func TestRelay_TakenButNotAnswered(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(time.Second)
	o, token := f.open(r, "slow")
	a := r.access(t, f.writer, f.account)
	next := make(chan *listeners.Attempt, 1)
	go func() {
		att, _ := r.svc.Next(context.Background(), a, o.Listener.ID, 10*time.Second)
		next <- att
	}()
	waitPolling(t, f.db.Pool, o.Listener.ID)
	res, err := r.svc.Relay(context.Background(), token, signed(o.Secret, "wdl_0123456789abcdef0123456789", body, time.Now()), body)
	if err != nil || res.Outcome != listeners.RelayNoAnswer {
		t.Fatalf("Relay = %+v, %v; want RelayNoAnswer", res, err)
	}
	att := <-next
	err = r.svc.Answer(context.Background(), a, o.Listener.ID, att.ID, listeners.Answer{StatusCode: 200})
	if webhooks.ErrorCode(err) != webhooks.ECONFLICT {
		t.Fatalf("late Answer = %v, want a conflict", err)
	}
}

// TestRelay_RefusesForgedRequests: only a recent attempt signed with the
// listener's own webhook secret (both signatures) is relayed.
func TestRelay_RefusesForgedRequests(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	o, token := f.open(r, "guarded")
	other, _ := f.open(r, "another")
	const id = "wdl_0123456789abcdef0123456789"
	now := time.Now()
	tests := []struct {
		name   string
		token  string
		header func() http.Header
		body   []byte
		code   string
	}{
		{"UnknownToken", "whr_unknown", func() http.Header { return signed(o.Secret, id, body, now) }, body, webhooks.ENOTFOUND},
		{"NotAToken", "../api", func() http.Header { return signed(o.Secret, id, body, now) }, body, webhooks.ENOTFOUND},
		{"Unsigned", token, func() http.Header { return http.Header{} }, body, webhooks.EUNAUTHORIZED},
		{"AnotherWebhooksSecret", token, func() http.Header { return signed(other.Secret, id, body, now) }, body, webhooks.EUNAUTHORIZED},
		{"ChangedBody", token, func() http.Header { return signed(o.Secret, id, body, now) }, []byte(`{"eventType":"job.run.errored"}`), webhooks.EUNAUTHORIZED},
		{"StaleTimestamp", token, func() http.Header { return signed(o.Secret, id, body, now.Add(-10*time.Minute)) }, body, webhooks.EUNAUTHORIZED},
		{"FutureTimestamp", token, func() http.Header { return signed(o.Secret, id, body, now.Add(10*time.Minute)) }, body, webhooks.EUNAUTHORIZED},
		{"AuthorizationOnly", token, func() http.Header {
			h := signed(o.Secret, id, body, now)
			h.Set("Webhook-Signature", "v1,AAAA")
			return h
		}, body, webhooks.EUNAUTHORIZED},
		{"StandardSignatureOnly", token, func() http.Header {
			h := signed(o.Secret, id, body, now)
			h.Set("Authorization", webhooks.Sign(other.Secret, body))
			return h
		}, body, webhooks.EUNAUTHORIZED},
		{"AnotherDeliveryID", token, func() http.Header {
			h := signed(o.Secret, id, body, now)
			h.Set("Webhook-Id", "wdl_ffffffffffffffffffffffffff")
			return h
		}, body, webhooks.EUNAUTHORIZED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.svc.Relay(context.Background(), tt.token, tt.header(), tt.body)
			if got := webhooks.ErrorCode(err); got != tt.code {
				t.Fatalf("Relay = %v (code %q), want %q", err, got, tt.code)
			}
		})
	}
}

// TestOpen_ReusesTheListenerOfAName: the same name is the same listener and
// webhook, set to the events asked for; once its webhook is deleted, the
// name gets a new webhook; a reader may not open one.
func TestOpen_ReusesTheListenerOfAName(t *testing.T) {
	f := newFixture(t)
	r := f.newReplica(5 * time.Second)
	ctx := context.Background()
	a := r.access(t, f.writer, f.account)
	first, err := r.svc.Open(ctx, a, listeners.OpenInput{Name: "laptop", EventTypes: webhooks.EventTypes})
	if err != nil || !first.Created {
		t.Fatalf("first Open = %+v, %v; want a new listener", first, err)
	}
	again, err := r.svc.Open(ctx, a, listeners.OpenInput{Name: "laptop", EventTypes: []string{webhooks.EventRunErrored}, JobIDs: []int64{7}})
	if err != nil || again.Created || again.Listener.ID != first.Listener.ID || again.Listener.SubscriptionID != first.Listener.SubscriptionID || again.Secret != first.Secret {
		t.Fatalf("second Open = %+v, %v; want the same listener, webhook and secret", again, err)
	}
	sub, err := r.subs.Get(ctx, a, first.Listener.SubscriptionID)
	if err != nil || len(sub.EventTypes) != 1 || sub.EventTypes[0] != webhooks.EventRunErrored || len(sub.JobIDs) != 1 || !sub.Active {
		t.Fatalf("webhook after reuse = %+v, %v; want job.run.errored of job 7, active", sub, err)
	}
	if err := r.subs.Delete(ctx, a, first.Listener.SubscriptionID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Next(ctx, a, first.Listener.ID, 0); !errors.Is(err, listeners.ErrNotFound) {
		t.Fatalf("Next on a listener whose webhook was deleted = %v, want not found", err)
	}
	renewed, err := r.svc.Open(ctx, a, listeners.OpenInput{Name: "laptop", EventTypes: webhooks.EventTypes})
	if err != nil || renewed.Created || renewed.Listener.ID != first.Listener.ID || renewed.Listener.SubscriptionID == first.Listener.SubscriptionID {
		t.Fatalf("Open after the webhook was deleted = %+v, %v; want the listener on a new webhook", renewed, err)
	}

	_, reader := f.newAccount("read_only")
	reader.Memberships[0].Account = f.account
	if _, err := r.svc.Open(ctx, r.access(t, reader, f.account), listeners.OpenInput{Name: "reader", EventTypes: webhooks.EventTypes}); webhooks.ErrorCode(err) != webhooks.EFORBIDDEN {
		t.Fatalf("Open by a reader = %v, want forbidden", err)
	}
	if _, err := r.svc.Open(ctx, a, listeners.OpenInput{Name: " ", EventTypes: webhooks.EventTypes}); webhooks.ErrorCode(err) != webhooks.EINVALID {
		t.Fatalf("Open with a blank name = %v, want invalid", err)
	}
}

// waitOpenPolls waits until the listener has n long polls open.
func waitOpenPolls(t *testing.T, f *fixture, listenerID string, n int) {
	t.Helper()
	var open int
	for range 250 {
		if err := f.db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM webhook_listener_polls WHERE listener_id = $1 AND ended_at IS NULL AND polling_until > now()", listenerID).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("listener %s has %d polls open, want %d", listenerID, open, n)
}
