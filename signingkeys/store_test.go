package signingkeys_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
)

func mustBox(tb testing.TB) *secrets.Box {
	tb.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: key}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type fixture struct {
	db    *testenv.Database
	store *signingkeys.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	return fixture{db: db, store: signingkeys.NewStore(db.Pool, mustBox(t))}
}

func (f fixture) mustAccount(t *testing.T) int64 {
	t.Helper()
	a, err := identity.NewStore(f.db.Pool).CreateAccount(t.Context(), webhooks.NewID("acct"), webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// verifies is a receiver with Go's crypto/ed25519 and nothing of ours:
// some v1a signature of header is pub's signature of id, ts and body.
func verifies(pub ed25519.PublicKey, id string, ts time.Time, body []byte, header string) bool {
	msg := []byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "." + string(body))
	for _, s := range strings.Fields(header) {
		if b64, ok := strings.CutPrefix(s, "v1a,"); ok {
			if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && ed25519.Verify(pub, msg, sig) {
				return true
			}
		}
	}
	return false
}

func mustKeys(t *testing.T, s *signingkeys.Store, accountID int64, now time.Time) []signingkeys.Key {
	t.Helper()
	keys, err := s.Keys(t.Context(), accountID, now)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func mustRing(t *testing.T, s *signingkeys.Store, accountID int64, now time.Time) signingkeys.Ring {
	t.Helper()
	r, err := s.Ring(t.Context(), accountID, now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStore_FirstUseMakesOneKey: concurrent first uses of an account make
// one current key, whose ring's signature verifies with its public key.
func TestStore_FirstUseMakesOneKey(t *testing.T) {
	f := newFixture(t)
	acct := f.mustAccount(t)
	now := time.Now()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, err := f.store.Keys(context.Background(), acct, now)
			errs[i] = err
			if err == nil && len(keys) == 1 {
				ids[i] = keys[0].ID
			}
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] == "" || ids[i] != ids[0] {
			t.Fatalf("first uses: ids %v, errors %v; want one key for all", ids, errs)
		}
	}
	var n int
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT count(*) FROM account_signing_keys WHERE account_id = $1", acct).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want 1", n, err)
	}
	key := mustKeys(t, f.store, acct, now)[0]
	if key.ID != signingkeys.Thumbprint(key.Public) || key.ValidUntil != nil {
		t.Errorf("key %+v: want its thumbprint as id and no end", key)
	}
	body := []byte(`{"eventType":"job.run.completed"}`)
	if sig := mustRing(t, f.store, acct, now).Sign("wdl_1", now, body); !verifies(key.Public, "wdl_1", now, body, sig) {
		t.Errorf("signature %q does not verify with the published key", sig)
	}
}

// TestStore_PrivateKeyIsSealed: the row holds the private key only sealed
// and bound to its account: the stored bytes do not contain the seed, and
// a ciphertext copied onto another account's key does not open.
func TestStore_PrivateKeyIsSealed(t *testing.T) {
	f := newFixture(t)
	a, b := f.mustAccount(t), f.mustAccount(t)
	now := time.Now()
	mustKeys(t, f.store, a, now)
	mustKeys(t, f.store, b, now)
	var sealedA []byte
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT private_key_ciphertext FROM account_signing_keys WHERE account_id = $1", a).Scan(&sealedA); err != nil {
		t.Fatal(err)
	}
	if len(sealedA) < ed25519.SeedSize+16 {
		t.Fatalf("stored private key is %d bytes: not sealed", len(sealedA))
	}
	if _, err := f.db.Pool.Exec(t.Context(), "UPDATE account_signing_keys SET private_key_ciphertext = $1 WHERE account_id = $2", sealedA, b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Ring(t.Context(), b, now); err == nil {
		t.Fatal("another account's sealed key opened as this account's")
	}
	if _, err := f.store.Ring(t.Context(), a, now); err != nil {
		t.Fatalf("the account's own key: %v", err)
	}
}

// TestStore_RotationOverlap: after a rotation both keys sign and are
// published until the overlap ends; then only the new one does, even with
// a ring read during the overlap. Verified with crypto/ed25519.
func TestStore_RotationOverlap(t *testing.T) {
	f := newFixture(t)
	acct := f.mustAccount(t)
	t0 := time.Now().Truncate(time.Second)
	old := mustKeys(t, f.store, acct, t0)[0]

	rotatedAt := t0.Add(time.Minute)
	keys, err := f.store.Rotate(t.Context(), acct, rotatedAt, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1].ID != old.ID || keys[0].ValidUntil != nil || keys[1].ValidUntil == nil || !keys[1].ValidUntil.Equal(rotatedAt.Add(time.Hour)) {
		t.Fatalf("after the rotation: %+v; want the new key, then the old until the overlap ends", keys)
	}
	current := keys[0]
	body := []byte(`{"eventType":"job.run.errored"}`)

	during := rotatedAt.Add(30 * time.Minute)
	ring := mustRing(t, f.store, acct, during)
	sig := ring.Sign("wdl_1", during, body)
	if strings.Count(sig, "v1a,") != 2 || !verifies(current.Public, "wdl_1", during, body, sig) || !verifies(old.Public, "wdl_1", during, body, sig) {
		t.Fatalf("during the overlap %q: want two signatures, by the new and the old key", sig)
	}

	after := rotatedAt.Add(time.Hour)
	sig = ring.Sign("wdl_2", after, body) // a ring read during the overlap
	if strings.Count(sig, "v1a,") != 1 || !verifies(current.Public, "wdl_2", after, body, sig) || verifies(old.Public, "wdl_2", after, body, sig) {
		t.Fatalf("after the overlap %q: want the new key's signature alone", sig)
	}
	if keys := mustKeys(t, f.store, acct, after); len(keys) != 1 || keys[0].ID != current.ID {
		t.Fatalf("published after the overlap: %+v, want the new key alone", keys)
	}
}

// TestStore_RotationDuringOverlapEndsIt: a second rotation retires the
// key of the first one's overlap at once, so at most two keys sign.
func TestStore_RotationDuringOverlapEndsIt(t *testing.T) {
	f := newFixture(t)
	acct := f.mustAccount(t)
	now := time.Now()
	first := mustKeys(t, f.store, acct, now)[0]
	k1, err := f.store.Rotate(t.Context(), acct, now.Add(time.Second), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := f.store.Rotate(t.Context(), acct, now.Add(2*time.Second), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(k2) != 2 || k2[1].ID != k1[0].ID || k2[0].ID == first.ID || k2[1].ID == first.ID {
		t.Fatalf("after two rotations: %+v; want the newest and the one before, not the first", k2)
	}
}

// TestStore_AccountsAreIsolated: each account has keys of its own, and
// one account's rotation leaves another's alone.
func TestStore_AccountsAreIsolated(t *testing.T) {
	f := newFixture(t)
	a, b := f.mustAccount(t), f.mustAccount(t)
	now := time.Now()
	ka, kb := mustKeys(t, f.store, a, now), mustKeys(t, f.store, b, now)
	if ka[0].ID == kb[0].ID || bytes.Equal(ka[0].Public, kb[0].Public) {
		t.Fatal("two accounts share a key")
	}
	if _, err := f.store.Rotate(t.Context(), a, now.Add(time.Second), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := mustKeys(t, f.store, b, now.Add(2*time.Second)); len(got) != 1 || got[0].ID != kb[0].ID {
		t.Fatalf("b's keys after a's rotation: %+v", got)
	}
	body := []byte(`{}`)
	sig := mustRing(t, f.store, b, now).Sign("wdl_1", now, body)
	if verifies(ka[0].Public, "wdl_1", now, body, sig) {
		t.Fatal("b's delivery verifies with a's key")
	}
}

func TestStore_UnknownAccount(t *testing.T) {
	f := newFixture(t)
	if _, err := f.store.Keys(t.Context(), 987654321, time.Now()); !errors.Is(err, signingkeys.ErrNoAccount) {
		t.Fatalf("Keys of an unknown account: %v, want ErrNoAccount", err)
	}
	if _, err := f.store.Rotate(t.Context(), 987654321, time.Now(), time.Hour); !errors.Is(err, signingkeys.ErrNoAccount) {
		t.Fatalf("Rotate of an unknown account: %v, want ErrNoAccount", err)
	}
}

// TestThumbprint_RFC8037Example: the thumbprint of RFC 8037's example key
// (appendix A.3).
func TestThumbprint_RFC8037Example(t *testing.T) {
	x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if got, want := signingkeys.Thumbprint(x), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Fatalf("Thumbprint = %s, want %s", got, want)
	}
}

// TestStore_CurrentKeyFirst: the current key comes first even when a
// rotation happens at the instant the key it replaces was made (the ring
// signs with it first, and lists show it first).
func TestStore_CurrentKeyFirst(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	for range 5 {
		acct := f.mustAccount(t)
		first := mustKeys(t, f.store, acct, now)[0]
		keys, err := f.store.Rotate(t.Context(), acct, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || keys[0].ValidUntil != nil || keys[1].ID != first.ID {
			t.Fatalf("after a rotation at the same instant: %+v, want the new current key first", keys)
		}
	}
}
