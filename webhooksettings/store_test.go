package webhooksettings_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

type fixture struct {
	db    *testenv.Database
	box   *secrets.Box
	subs  *subscriptions.Store
	store *webhooksettings.Store
	a, b  webhooks.Account
}

func newBox(t *testing.T, id string) (*secrets.Box, secrets.Key) {
	t.Helper()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := secrets.Key{ID: id, Key: raw}
	box, err := secrets.NewBox([]secrets.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	return box, key
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	box, _ := newBox(t, "k1")
	ids := identity.NewStore(db.Pool)
	a, err := ids.CreateAccount(t.Context(), "a", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ids.CreateAccount(t.Context(), "b", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, box: box, subs: subscriptions.NewStore(db.Pool, box),
		store: webhooksettings.NewStore(db.Pool, box), a: a, b: b}
}

func (f *fixture) mustCreateWebhook(t *testing.T, acct webhooks.Account) webhooks.Subscription {
	t.Helper()
	sub, _, err := f.subs.Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "hook", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func (f *fixture) mustUpdate(t *testing.T, acct webhooks.Account, id string, u webhooksettings.Update) webhooksettings.Settings {
	t.Helper()
	if err := u.Problems(time.Now()).Err(); err != nil {
		t.Fatalf("update has problems: %v", err)
	}
	s, err := f.store.Update(t.Context(), acct.ID, id, u, time.Now())
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return s
}

func secret(name, value string) webhooksettings.HeaderInput {
	return webhooksettings.HeaderInput{Name: name, Value: &value, Secret: true}
}

func kept(name string) webhooksettings.HeaderInput {
	return webhooksettings.HeaderInput{Name: name, Secret: true}
}

func TestStore_DefaultsAndNotFound(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	got, err := f.store.Get(t.Context(), f.a.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.WebhookID != sub.ID || got.MaxRequestsPerSecond != nil || got.Headers == nil || len(got.Headers) != 0 ||
		got.ClientCertificate != nil || got.UpdatedAt != nil {
		t.Errorf("defaults = %+v", got)
	}
	deleted := f.mustCreateWebhook(t, f.a)
	if err := f.subs.Delete(t.Context(), f.a.ID, deleted.ID); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		account int64
		id      string
	}{
		"Unknown":        {f.a.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix)},
		"OtherAccount":   {f.b.ID, sub.ID},
		"DeletedWebhook": {f.a.ID, deleted.ID},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := f.store.Get(t.Context(), c.account, c.id); !errors.Is(err, subscriptions.ErrNotFound) {
				t.Errorf("Get: %v, want ErrNotFound", err)
			}
			_, err := f.store.Update(t.Context(), c.account, c.id, webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: ptr(5.0)}}, time.Now())
			if !errors.Is(err, subscriptions.ErrNotFound) {
				t.Errorf("Update: %v, want ErrNotFound", err)
			}
		})
	}
	var n int
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT count(*) FROM webhook_delivery_settings").Scan(&n); err != nil || n != 0 {
		t.Errorf("settings rows = %d, %v; refused updates must store nothing", n, err)
	}
}

// Secret header values and the private key are only ever stored sealed:
// no column of the row holds them in clear, in any encoding.
func TestStore_SecretsSealedAtRest(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	ca := testcerts.NewCA(t, "At rest CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "at rest"})
	const secretValue = "sk_live_do-not-store-me-in-clear"
	got := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{
		Rate:        &webhooksettings.Rate{MaxRequestsPerSecond: ptr(12.5)},
		Headers:     headers(plain("X-Team", "data"), secret("X-Api-Key", secretValue)),
		Certificate: &webhooksettings.CertificateInput{CertificatePEM: cert, PrivateKeyPEM: key},
	})
	if got.Headers[1].Value != "" || !got.Headers[1].Secret || got.Headers[0].Value != "data" {
		t.Errorf("returned headers = %+v", got.Headers)
	}
	var row string
	if err := f.db.Pool.QueryRow(t.Context(),
		"SELECT row_to_json(d)::text FROM webhook_delivery_settings d WHERE subscription_id = $1", sub.ID).Scan(&row); err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(key, "\n")[1]
	for _, clear := range []string{secretValue, "do-not-store", keyBody[:24], "PRIVATE KEY"} {
		if strings.Contains(row, clear) {
			t.Errorf("the stored row holds %q in clear: %s", clear, row)
		}
	}
	if !strings.Contains(row, `"key_id": "k1"`) && !strings.Contains(row, `"key_id":"k1"`) {
		t.Errorf("the secret header is not sealed with k1: %s", row)
	}
	// The worker opens them.
	sending, err := f.store.ForSending(t.Context(), []string{sub.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := sending[sub.ID]
	if !ok || len(sending) != 1 || s.Err != nil {
		t.Fatalf("ForSending = %+v", sending)
	}
	if s.Headers[1].Value != secretValue || *s.MaxRequestsPerSecond != 12.5 || s.Certificate == nil || s.Certificate.SHA256 != got.ClientCertificate.SHA256 {
		t.Errorf("opened = %+v", s)
	}
	if _, err := s.Certificate.TLS(); err != nil {
		t.Errorf("opened certificate: %v", err)
	}
	rates, err := f.store.MaxRequestsPerSecond(t.Context(), []string{sub.ID})
	if err != nil || rates[sub.ID] != 12.5 {
		t.Errorf("MaxRequestsPerSecond = %v, %v", rates, err)
	}
}

// A sealed value is bound to its webhook: copied onto another webhook's
// row it does not open, and that webhook's attempts fail rather than go out
// without it.
func TestStore_CiphertextBoundToWebhook(t *testing.T) {
	f := newFixture(t)
	a, b := f.mustCreateWebhook(t, f.a), f.mustCreateWebhook(t, f.a)
	f.mustUpdate(t, f.a, a.ID, webhooksettings.Update{Headers: headers(secret("X-Api-Key", "a's key"))})
	f.mustUpdate(t, f.a, b.ID, webhooksettings.Update{Headers: headers(secret("X-Api-Key", "b's key"))})
	if _, err := f.db.Pool.Exec(t.Context(),
		"UPDATE webhook_delivery_settings SET headers = (SELECT headers FROM webhook_delivery_settings WHERE subscription_id = $1) WHERE subscription_id = $2",
		a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	sending, err := f.store.ForSending(t.Context(), []string{a.ID, b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if sending[a.ID].Err != nil || sending[a.ID].Headers[0].Value != "a's key" {
		t.Errorf("a = %+v", sending[a.ID])
	}
	if sending[b.ID].Err == nil || strings.Contains(sending[b.ID].Err.Error(), "a's key") {
		t.Errorf("b's copied ciphertext: err %v, want a decryption error", sending[b.ID].Err)
	}
}

func TestStore_UpdateKeepsWhatItIsAskedTo(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	ca := testcerts.NewCA(t, "Keep CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "keep"})
	first := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{
		Rate:        &webhooksettings.Rate{MaxRequestsPerSecond: ptr(3.0)},
		Headers:     headers(secret("X-Api-Key", "original"), plain("X-Team", "a")),
		Certificate: &webhooksettings.CertificateInput{CertificatePEM: cert, PrivateKeyPEM: key},
	})
	open := func() webhooksettings.Sending {
		t.Helper()
		s, err := f.store.ForSending(t.Context(), []string{sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		return s[sub.ID]
	}

	t.Run("SecretKeptWithoutItsValue", func(t *testing.T) {
		got := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{
			Rate:    &webhooksettings.Rate{},
			Headers: headers(plain("X-Team", "b"), kept("x-api-key")),
		})
		s := open()
		if got.MaxRequestsPerSecond != nil || s.Headers[1].Name != "x-api-key" || s.Headers[1].Value != "original" || s.Headers[0].Value != "b" {
			t.Errorf("after keeping: %+v / %+v", got, s)
		}
		if got.ClientCertificate == nil || got.ClientCertificate.SHA256 != first.ClientCertificate.SHA256 {
			t.Errorf("certificate not kept: %+v", got.ClientCertificate)
		}
		if !got.UpdatedAt.After(*first.UpdatedAt) {
			t.Errorf("updated_at %v did not advance from %v", got.UpdatedAt, first.UpdatedAt)
		}
	})
	t.Run("SecretReplaced", func(t *testing.T) {
		f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Headers: headers(secret("X-Api-Key", "rotated"))})
		if s := open(); len(s.Headers) != 1 || s.Headers[0].Value != "rotated" {
			t.Errorf("headers = %+v", s.Headers)
		}
	})
	t.Run("KeepingAnUnknownSecretStoresNothing", func(t *testing.T) {
		_, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{
			Rate: &webhooksettings.Rate{MaxRequestsPerSecond: ptr(9.0)}, Headers: headers(kept("X-Other")),
		}, time.Now())
		var e *webhooks.Error
		if !errors.As(err, &e) || e.Field != "headers[0].value" || !strings.Contains(e.Message, `"X-Other"`) {
			t.Fatalf("err = %v, want a problem of headers[0].value naming X-Other", err)
		}
		if s := open(); s.MaxRequestsPerSecond != nil || s.Headers[0].Value != "rotated" {
			t.Errorf("a refused update changed the settings: %+v", s)
		}
	})
	t.Run("PlainHeaderIsNoSecretToKeep", func(t *testing.T) {
		f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Headers: headers(plain("X-Team", "c"))})
		_, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{Headers: headers(kept("X-Team"))}, time.Now())
		if !errors.As(err, new(*webhooks.Error)) {
			t.Fatalf("err = %v, want a field problem", err)
		}
	})
	t.Run("CertificateRemovedThenNotKept", func(t *testing.T) {
		got := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Certificate: &webhooksettings.CertificateInput{Remove: true}})
		if got.ClientCertificate != nil || open().Certificate != nil {
			t.Fatalf("certificate not removed: %+v", got.ClientCertificate)
		}
		_, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{Certificate: &webhooksettings.CertificateInput{}}, time.Now())
		var e *webhooks.Error
		if !errors.As(err, &e) || e.Field != "client_certificate.certificate" {
			t.Fatalf("keeping no certificate: %v", err)
		}
	})
}

// secrets reencrypt: every secret header value and private key ends up
// sealed with the primary key alone, values unchanged.
func TestStore_ResealSecrets(t *testing.T) {
	f := newFixture(t)
	oldBox, oldKey := newBox(t, "old")
	_, newKey := newBox(t, "new")
	old := webhooksettings.NewStore(f.db.Pool, oldBox)
	ca := testcerts.NewCA(t, "Reseal CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "reseal"})
	var ids []string
	for range 3 {
		sub := f.mustCreateWebhook(t, f.a)
		ids = append(ids, sub.ID)
		if _, err := old.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{
			Headers:     headers(secret("X-One", "one "+sub.ID), plain("X-Plain", "p"), secret("X-Two", "two")),
			Certificate: &webhooksettings.CertificateInput{CertificatePEM: cert, PrivateKeyPEM: key},
		}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	plainOnly := f.mustCreateWebhook(t, f.a)
	f.mustUpdate(t, f.a, plainOnly.ID, webhooksettings.Update{Headers: headers(plain("X-Plain", "p"))})

	both, err := secrets.NewBox([]secrets.Key{newKey, oldKey})
	if err != nil {
		t.Fatal(err)
	}
	n, err := webhooksettings.NewStore(f.db.Pool, both).ResealSecrets(t.Context())
	if err != nil || n != 9 {
		t.Fatalf("ResealSecrets = %d, %v; want 9 (two headers and a key, three times)", n, err)
	}
	newOnly, _ := secrets.NewBox([]secrets.Key{newKey})
	sending, err := webhooksettings.NewStore(f.db.Pool, newOnly).ForSending(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		s := sending[id]
		if s.Err != nil || s.Headers[0].Value != "one "+id || s.Headers[2].Value != "two" || s.Certificate == nil || s.Certificate.KeyPEM != key {
			t.Errorf("%s with the new key alone: %+v", id, s)
		}
	}
	if n, err := webhooksettings.NewStore(f.db.Pool, both).ResealSecrets(t.Context()); err != nil || n != 0 {
		t.Errorf("second run = %d, %v; want 0", n, err)
	}
	t.Run("OldKeyMissing", func(t *testing.T) {
		sub := f.mustCreateWebhook(t, f.a)
		if _, err := old.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{Headers: headers(secret("X-Key", "k"))}, time.Now()); err != nil {
			t.Fatal(err)
		}
		_, err := webhooksettings.NewStore(f.db.Pool, newOnly).ResealSecrets(t.Context())
		if err == nil || !strings.Contains(err.Error(), sub.ID) || !strings.Contains(err.Error(), `unknown key id "old"`) {
			t.Fatalf("err = %v, want one naming the webhook and the key", err)
		}
	})
}

// Concurrent updates of one webhook, the first ones included, apply one
// after another: none fails, and an update that keeps a secret never puts
// back a value another replaced meanwhile.
func TestStore_ConcurrentUpdatesApplyOneAfterAnother(t *testing.T) {
	f := newFixture(t)
	for round := range 3 {
		sub := f.mustCreateWebhook(t, f.a)
		f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Headers: headers(secret("X-Key", "first"))})
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				u := webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: ptr(float64(i + 1))},
					Headers: headers(kept("X-Key"), plain("X-Writer", fmt.Sprint(i)))}
				if i == 3 {
					u.Headers = headers(secret("X-Key", "second"))
				}
				_, err := f.store.Update(t.Context(), f.a.ID, sub.ID, u, time.Now())
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("round %d: concurrent update: %v", round, err)
			}
		}
		s, err := f.store.ForSending(t.Context(), []string{sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		// In every order, the keeps keep what is there: "second" wins.
		if got := s[sub.ID]; got.Err != nil || got.Headers[0].Value != "second" {
			t.Fatalf("round %d: after concurrent updates: %+v", round, got)
		}
	}
}
