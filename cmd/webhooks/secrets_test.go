package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// TestSecretsReencrypt walks a key rotation: subscriptions sealed with
// "old", then SECRET_ENCRYPTION_KEYS="new:...,old:..." and
// "secrets reencrypt", after which "new" alone opens every secret.
func TestSecretsReencrypt(t *testing.T) {
	db := testenv.NewDatabase(t)
	oldKey := secrets.Key{ID: "old", Key: bytes.Repeat([]byte{1}, 32)}
	newKey := secrets.Key{ID: "new", Key: bytes.Repeat([]byte{2}, 32)}
	keyText := func(k secrets.Key) string { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Key) }

	oldBox, _ := secrets.NewBox([]secrets.Key{oldKey})
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "rotating", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for range 3 {
		sub, secret, err := subscriptions.NewStore(db.Pool, oldBox).Create(t.Context(), webhooks.Subscription{
			AccountID: acct.ID, Name: "s", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, Active: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		want[sub.ID] = secret
	}

	getenv := testEnv(t, db.URL, map[string]string{"SECRET_ENCRYPTION_KEYS": keyText(newKey) + "," + keyText(oldKey)})
	var got struct {
		Resealed     int    `json:"resealed"`
		PrimaryKeyID string `json:"primary_key_id"`
	}
	mustRunJSON(t, getenv, &got, "secrets", "reencrypt")
	if got.Resealed != 3 || got.PrimaryKeyID != "new" {
		t.Fatalf("output = %+v, want 3 resealed with key new", got)
	}
	newOnly, _ := secrets.NewBox([]secrets.Key{newKey})
	for id, secret := range want {
		var keyID string
		var sealed []byte
		if err := db.Pool.QueryRow(t.Context(), "SELECT secret_key_id, secret_ciphertext FROM webhook_subscriptions WHERE id = $1", id).Scan(&keyID, &sealed); err != nil {
			t.Fatal(err)
		}
		if opened, err := newOnly.Open(keyID, sealed, id); err != nil || opened != secret {
			t.Errorf("%s: opens to %q, %v with the new key alone", id, opened, err)
		}
	}
	mustRunJSON(t, getenv, &got, "secrets", "reencrypt")
	if got.Resealed != 0 {
		t.Errorf("second run resealed %d, want 0", got.Resealed)
	}

	// Without the old key listed, secrets it sealed cannot be resealed.
	t.Run("OldKeyMissing", func(t *testing.T) {
		db := testenv.NewDatabase(t)
		acct, _ := identity.NewStore(db.Pool).CreateAccount(t.Context(), "a", webhooks.PlanTeam)
		if _, _, err := subscriptions.NewStore(db.Pool, oldBox).Create(t.Context(), webhooks.Subscription{
			AccountID: acct.ID, Name: "s", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes,
		}); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCommand(t, testEnv(t, db.URL, map[string]string{"SECRET_ENCRYPTION_KEYS": keyText(newKey)}), "secrets", "reencrypt")
		if err == nil || !strings.Contains(err.Error(), `unknown key id "old"`) {
			t.Fatalf("err = %v, want unknown key id", err)
		}
	})
}

func TestSecrets_Usage(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, args := range [][]string{{"secrets", "--help"}, {"secrets", "reencrypt", "--help"}} {
		stdout, stderr, err := runCommand(t, getenv, args...)
		if err != nil || !strings.Contains(stdout+stderr, "Usage: webhooks secrets") {
			t.Errorf("%v: %v, output %q", args, err, stdout+stderr)
		}
	}
	if _, _, err := runCommand(t, getenv, "secrets"); !errors.Is(err, errUsage) {
		t.Errorf("secrets without subcommand: %v, want errUsage", err)
	}
}

// TestSecretsReencrypt_DeliverySettings: the reencrypt command reseals the
// secret header values and client certificate keys of webhooks' delivery
// settings with the hmac_secrets.
func TestSecretsReencrypt_DeliverySettings(t *testing.T) {
	db := testenv.NewDatabase(t)
	oldKey := secrets.Key{ID: "old", Key: bytes.Repeat([]byte{3}, 32)}
	newKey := secrets.Key{ID: "new", Key: bytes.Repeat([]byte{4}, 32)}
	keyText := func(k secrets.Key) string { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Key) }
	oldBox, _ := secrets.NewBox([]secrets.Key{oldKey})
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "settings", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := subscriptions.NewStore(db.Pool, oldBox).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "s", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, key := testcerts.NewCA(t, "Reencrypt CA").Issue(t, testcerts.Leaf{CommonName: "reencrypt"})
	value := "header secret"
	if _, err := webhooksettings.NewStore(db.Pool, oldBox).Update(t.Context(), acct.ID, sub.ID, webhooksettings.Update{
		Headers:     &[]webhooksettings.HeaderInput{{Name: "X-Key", Value: &value, Secret: true}},
		Certificate: &webhooksettings.CertificateInput{CertificatePEM: cert, PrivateKeyPEM: key},
	}, time.Now()); err != nil {
		t.Fatal(err)
	}
	store := incidents.NewStore(db.Pool)
	noticeKeyID, noticeSealed := oldBox.Seal("notification secret", webhooks.NotificationSecretAAD(acct.ID))
	if _, _, err := store.PutNotificationEndpoint(t.Context(), incidents.StoredEndpoint{AccountID: acct.ID,
		URL: "https://ops.example.com/notices", SecretKeyID: noticeKeyID, SecretCiphertext: noticeSealed}, false); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Resealed     int    `json:"resealed"`
		PrimaryKeyID string `json:"primary_key_id"`
	}
	mustRunJSON(t, testEnv(t, db.URL, map[string]string{"SECRET_ENCRYPTION_KEYS": keyText(newKey) + "," + keyText(oldKey)}), &got, "secrets", "reencrypt")
	if got.Resealed != 4 {
		t.Fatalf("resealed %d, want 4 (the hmac_secret, the header value, the key, the notification endpoint's secret)", got.Resealed)
	}
	newOnly, _ := secrets.NewBox([]secrets.Key{newKey})
	opened, err := webhooksettings.NewStore(db.Pool, newOnly).ForSending(t.Context(), []string{sub.ID})
	if err != nil {
		t.Fatal(err)
	}
	if s := opened[sub.ID]; s.Err != nil || s.Headers[0].Value != value || s.Certificate == nil || s.Certificate.KeyPEM != key {
		t.Errorf("with the new key alone: %+v", s)
	}
	ep, err := store.NotificationEndpoint(t.Context(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := newOnly.Open(ep.SecretKeyID, ep.SecretCiphertext, webhooks.NotificationSecretAAD(acct.ID)); err != nil || plain != "notification secret" {
		t.Errorf("the notification secret with the new key alone: %q (err %v)", plain, err)
	}
}

// TestSecretsReencrypt_SigningKeys: the reencrypt command reseals the
// accounts' Ed25519 private keys; the new key alone then opens them and
// they are the same keys (their signatures verify with the published
// public keys).
func TestSecretsReencrypt_SigningKeys(t *testing.T) {
	db := testenv.NewDatabase(t)
	oldKey := secrets.Key{ID: "old", Key: bytes.Repeat([]byte{5}, 32)}
	newKey := secrets.Key{ID: "new", Key: bytes.Repeat([]byte{6}, 32)}
	keyText := func(k secrets.Key) string { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Key) }
	oldBox, _ := secrets.NewBox([]secrets.Key{oldKey})
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "signing", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// The current key and, in its overlap, the previous one.
	published, err := signingkeys.NewStore(db.Pool, oldBox).Rotate(t.Context(), acct.ID, now, time.Hour)
	if err != nil || len(published) != 1 {
		t.Fatalf("first rotation: %v %v", published, err)
	}
	if published, err = signingkeys.NewStore(db.Pool, oldBox).Rotate(t.Context(), acct.ID, now, time.Hour); err != nil || len(published) != 2 {
		t.Fatalf("second rotation: %v %v", published, err)
	}
	var got struct {
		Resealed     int    `json:"resealed"`
		PrimaryKeyID string `json:"primary_key_id"`
	}
	mustRunJSON(t, testEnv(t, db.URL, map[string]string{"SECRET_ENCRYPTION_KEYS": keyText(newKey) + "," + keyText(oldKey)}), &got, "secrets", "reencrypt")
	if got.Resealed != 2 {
		t.Fatalf("resealed %d, want the 2 signing keys", got.Resealed)
	}
	newOnly, _ := secrets.NewBox([]secrets.Key{newKey})
	ring, err := signingkeys.NewStore(db.Pool, newOnly).Ring(t.Context(), acct.ID, now)
	if err != nil {
		t.Fatalf("the signing keys with the new key alone: %v", err)
	}
	body := []byte(`{}`)
	sig := ring.Sign("wdl_1", now, body)
	for _, k := range published {
		if !webhooks.VerifyStandardAsymmetric(k.Public, "wdl_1", now, body, sig) {
			t.Errorf("key %s changed in resealing: %q does not verify", k.ID, sig)
		}
	}
}
