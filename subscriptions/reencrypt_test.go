package subscriptions_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

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
