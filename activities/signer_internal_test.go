package activities

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// testClock is a settable clock shared by the activities and the key
// cache.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// v1aVerifies is a receiver with Go's crypto/ed25519 alone: a v1a entry
// of the request's webhook-signature is pub's signature of
// "{webhook-id}.{webhook-timestamp}.{body}".
func v1aVerifies(pub ed25519.PublicKey, h http.Header, body []byte) bool {
	msg := []byte(h.Get("Webhook-Id") + "." + h.Get("Webhook-Timestamp") + "." + string(body))
	for _, s := range strings.Split(h.Get("Webhook-Signature"), " ") {
		if b64, ok := strings.CutPrefix(s, "v1a,"); ok {
			if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && ed25519.Verify(pub, msg, sig) {
				return true
			}
		}
	}
	return false
}

// publishedKeys are an account's keys as the JWKS shows them: decoded
// from the JWK's x.
func publishedKeys(t *testing.T, store *signingkeys.Store, accountID int64, now time.Time) []ed25519.PublicKey {
	t.Helper()
	keys, err := store.Keys(context.Background(), accountID, now)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		x, err := base64.RawURLEncoding.DecodeString(k.JWK().X)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = x
	}
	return out
}

// TestSigner_V1aVerifiesWithThePublishedKeys: an attempt's headers keep
// the spec's Authorization and the v1 HMAC as they were, and add v1a
// signatures that verify with the published key; after a rotation with
// the new and the old key until the overlap ends, then with the new one
// only. A clock drives the rotation; crypto/ed25519 verifies.
func TestSigner_V1aVerifiesWithThePublishedKeys(t *testing.T) {
	db := testenv.NewDatabase(t)
	box := testBox(t)
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "signer", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Now()}
	store := signingkeys.NewStore(db.Pool, box)
	s := New(Deps{Box: box, Logger: slog.New(slog.DiscardHandler), Now: clock.now,
		SigningKeys: signingkeys.NewCache(store, clock.now)}).Rounds.send
	target := sealedTarget(t, box, "wsu_signer", "the-hmac-secret")
	target.AccountID = acct.ID
	body := []byte(`{"accountId":1,"eventType":"job.run.completed","data":{}}`)
	sign := func(id string) http.Header {
		t.Helper()
		h := http.Header{}
		if err := s.signer(context.Background(), target)(h, id, body); err != nil {
			t.Fatal(err)
		}
		return h
	}

	h := sign("wdl_first")
	published := publishedKeys(t, store, acct.ID, clock.now())
	if len(published) != 1 || !v1aVerifies(published[0], h, body) {
		t.Fatalf("first delivery %v does not verify with the published key", h)
	}
	ts, _ := strconv.ParseInt(h.Get("Webhook-Timestamp"), 10, 64)
	if h.Get("Authorization") != webhooks.Sign("the-hmac-secret", body) ||
		!strings.HasPrefix(h.Get("Webhook-Signature"), webhooks.SignStandard("the-hmac-secret", "wdl_first", time.Unix(ts, 0), body)+" v1a,") {
		t.Fatalf("the HMAC signatures changed: %v", h)
	}

	clock.add(time.Minute)
	if _, err := store.Rotate(t.Context(), acct.ID, clock.now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.add(signingkeys.FreshFor)
	newKey, oldKey := publishedKeys(t, store, acct.ID, clock.now())[0], published[0]
	h = sign("wdl_overlap")
	if strings.Count(h.Get("Webhook-Signature"), "v1a,") != 2 || !v1aVerifies(newKey, h, body) || !v1aVerifies(oldKey, h, body) {
		t.Fatalf("during the overlap %q: want v1a by the new and the old key", h.Get("Webhook-Signature"))
	}

	clock.add(time.Hour)
	h = sign("wdl_after")
	if !v1aVerifies(newKey, h, body) || v1aVerifies(oldKey, h, body) {
		t.Fatalf("after the overlap %q: want the new key's v1a alone", h.Get("Webhook-Signature"))
	}
	if got := publishedKeys(t, store, acct.ID, clock.now()); len(got) != 1 || !got[0].Equal(newKey) {
		t.Fatalf("published after the overlap: %d keys, want the new one alone", len(got))
	}

	// An account whose keys cannot be read gets no delivery out unsigned.
	target.AccountID = 987654321
	if err := s.signer(context.Background(), target)(http.Header{}, "wdl_x", body); !errors.Is(err, errSigningKeysUnreadable) {
		t.Fatalf("signing without keys: %v, want errSigningKeysUnreadable", err)
	}
}

// TestSendNotice_V1aVerifiesWithThePublishedKey: a notice carries the
// account's v1a signature beside the endpoint secret's HMAC.
func TestSendNotice_V1aVerifiesWithThePublishedKey(t *testing.T) {
	db := testenv.NewDatabase(t)
	box := testBox(t)
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "notices", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	srv, got := capture(t)
	ds := deliveries.NewStore(db.Pool)
	notices := incidents.NewStore(db.Pool)
	keyID, sealed := box.Seal("notice-secret", webhooks.NotificationSecretAAD(acct.ID))
	if _, _, err := notices.PutNotificationEndpoint(t.Context(), incidents.StoredEndpoint{AccountID: acct.ID, URL: srv.URL,
		SecretKeyID: keyID, SecretCiphertext: sealed}, false); err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"type":"webhook.disabled"}`)
	if _, err := notices.CreateNotice(t.Context(), incidents.Notice{ID: "ntc_signed", AccountID: acct.ID, SubscriptionID: "wsu_gone",
		Kind: webhooks.NoticeDisabled, IncidentStartedAt: time.Now(), Payload: payload}); err != nil {
		t.Fatal(err)
	}
	store := signingkeys.NewStore(db.Pool, box)
	ns := New(Deps{Store: ds, IncidentStore: notices, Box: box, HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler),
		SigningKeys: signingkeys.NewCache(store, nil)}).Notices
	if r, err := ns.SendNotice(t.Context(), "ntc_signed"); err != nil || r.Status != "delivered" {
		t.Fatalf("SendNotice = %+v, %v", r, err)
	}
	h := got()
	if pub := publishedKeys(t, store, acct.ID, time.Now()); !v1aVerifies(pub[0], h, payload) {
		t.Fatalf("notice headers %v: v1a does not verify with the published key", h)
	}
	if h.Get("Authorization") != webhooks.Sign("notice-secret", payload) {
		t.Errorf("Authorization changed: %q", h.Get("Authorization"))
	}
}
