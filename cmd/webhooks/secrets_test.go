package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
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
