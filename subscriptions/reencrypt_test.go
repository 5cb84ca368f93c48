package subscriptions_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

func newKey(id string) secrets.Key {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return secrets.Key{ID: id, Key: k}
}

func TestResealSecrets_RotatesToPrimaryKey(t *testing.T) {
	f := newFixture(t) // seals with key "k1"
	want := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		sub, secret := f.mustCreate(t, f.a, name)
		want[sub.ID] = secret
	}
	deleted, deletedSecret := f.mustCreate(t, f.b, "deleted")
	want[deleted.ID] = deletedSecret
	if err := f.store.Delete(t.Context(), f.b.ID, deleted.ID); err != nil {
		t.Fatal(err)
	}

	// Rotation: the new key first, the old one still listed.
	k2 := newKey("k2")
	rotated, err := secrets.NewBox([]secrets.Key{k2, f.key})
	if err != nil {
		t.Fatal(err)
	}
	store := subscriptions.NewStore(f.db.Pool, rotated)
	n, err := store.ResealSecrets(t.Context())
	if err != nil || n != len(want) {
		t.Fatalf("ResealSecrets = %d, %v; want %d", n, err, len(want))
	}
	// Every secret now opens with the new key alone, unchanged.
	onlyNew, _ := secrets.NewBox([]secrets.Key{k2})
	rows, err := f.db.Pool.Query(context.Background(), "SELECT id, secret_key_id, secret_ciphertext FROM webhook_subscriptions")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, keyID string
		var sealed []byte
		if err := rows.Scan(&id, &keyID, &sealed); err != nil {
			t.Fatal(err)
		}
		if got, err := onlyNew.Open(keyID, sealed, id); keyID != "k2" || err != nil || got != want[id] {
			t.Errorf("%s: key %s, opens to %q (%v), want k2 and the original secret", id, keyID, got, err)
		}
	}
	if n, err := store.ResealSecrets(t.Context()); n != 0 || err != nil {
		t.Errorf("second run = %d, %v; want 0, nil", n, err)
	}
}

func TestResealSecrets_UnknownKeyIsAnError(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.mustCreate(t, f.a, "x")
	withoutOld, _ := secrets.NewBox([]secrets.Key{newKey("k2")})
	n, err := subscriptions.NewStore(f.db.Pool, withoutOld).ResealSecrets(t.Context())
	if err == nil || n != 0 || !strings.Contains(err.Error(), sub.ID) {
		t.Fatalf("ResealSecrets = %d, %v; want an error naming %s", n, err, sub.ID)
	}
}

// TestResealSecrets_PreviousSecretsOfRotations: a previous secret still
// valid after a rotation is resealed with the primary key too (it opens
// with the new key alone, unchanged); an expired one is dropped.
func TestResealSecrets_PreviousSecretsOfRotations(t *testing.T) {
	f := newFixture(t) // seals with key "k1"
	valid, firstSecret := f.mustCreate(t, f.a, "valid")
	expiring, _ := f.mustCreate(t, f.a, "expired")
	later := time.Now().Add(time.Hour)
	if _, err := f.store.RotateSecret(t.Context(), f.a.ID, valid.ID, &later); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second)
	if _, err := f.store.RotateSecret(t.Context(), f.a.ID, expiring.ID, &past); err != nil {
		t.Fatal(err)
	}
	k2 := newKey("k2")
	rotated, err := secrets.NewBox([]secrets.Key{k2, f.key})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := subscriptions.NewStore(f.db.Pool, rotated).ResealSecrets(t.Context()); err != nil || n != 3 {
		t.Fatalf("ResealSecrets = %d, %v; want 3 (two current secrets, one previous)", n, err)
	}
	onlyNew, _ := secrets.NewBox([]secrets.Key{k2})
	var keyID string
	var sealed []byte
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT previous_secret_key_id, previous_secret_ciphertext FROM webhook_subscriptions WHERE id = $1", valid.ID).Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	if got, err := onlyNew.Open(keyID, sealed, valid.ID); err != nil || got != firstSecret {
		t.Errorf("previous secret: key %s opens to %q (%v), want the first secret under k2", keyID, got, err)
	}
	var dropped bool
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT previous_secret_ciphertext IS NULL FROM webhook_subscriptions WHERE id = $1", expiring.ID).Scan(&dropped); err != nil || !dropped {
		t.Errorf("expired previous secret dropped: %v (%v)", dropped, err)
	}
}
