package secrets_test

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/secrets"
)

func newKey(t *testing.T, id string) secrets.Key {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return secrets.Key{ID: id, Key: k}
}

func TestBox_SealOpenRoundTrip(t *testing.T) {
	box, err := secrets.NewBox([]secrets.Key{newKey(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	keyID, ct := box.Seal("s3cret", "wsu_1")
	if keyID != "k1" {
		t.Fatalf("key id = %q, want k1", keyID)
	}
	if bytes.Contains(ct, []byte("s3cret")) {
		t.Fatal("ciphertext contains the plaintext")
	}
	got, err := box.Open(keyID, ct, "wsu_1")
	if err != nil || got != "s3cret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box.Open(keyID, ct, "wsu_2"); err == nil {
		t.Fatal("ciphertext opened under another record's id")
	}
}

func TestBox_RotatedKeysStillOpenOldSecrets(t *testing.T) {
	old, fresh := newKey(t, "old"), newKey(t, "new")
	oldBox, _ := secrets.NewBox([]secrets.Key{old})
	keyID, ct := oldBox.Seal("s", "a")
	rotated, _ := secrets.NewBox([]secrets.Key{fresh, old})
	if got, err := rotated.Open(keyID, ct, "a"); err != nil || got != "s" {
		t.Fatalf("Open after rotation = %q, %v", got, err)
	}
	if id, _ := rotated.Seal("x", "a"); id != "new" {
		t.Fatalf("new secrets sealed with %q, want new", id)
	}
}

func TestNewToken_IsRandomAndPrefixed(t *testing.T) {
	a, b := secrets.NewToken(secrets.UserKeyPrefix), secrets.NewToken(secrets.UserKeyPrefix)
	if a == b || !strings.HasPrefix(a, "whu_") || len(a) < 4+43 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if bytes.Equal(secrets.HashToken(a), secrets.HashToken(b)) || len(secrets.HashToken(a)) != 32 {
		t.Fatal("hashes collide or have the wrong size")
	}
}

func TestNewBox_RequiresAKey(t *testing.T) {
	if _, err := secrets.NewBox(nil); err == nil {
		t.Fatal("NewBox without keys: no error")
	}
}
