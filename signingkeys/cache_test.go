package signingkeys_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/signingkeys"
)

// countingSource hands out rings of a real store and counts its loads;
// fail makes the next loads fail.
type countingSource struct {
	store   *signingkeys.Store
	account int64

	mu    sync.Mutex
	loads int
	fail  bool
}

func (s *countingSource) Ring(ctx context.Context, accountID int64, now time.Time) (signingkeys.Ring, error) {
	s.mu.Lock()
	s.loads++
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return signingkeys.Ring{}, errors.New("database down")
	}
	return s.store.Ring(ctx, accountID, now)
}

func (s *countingSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func ringIDs(t *testing.T, c *signingkeys.Cache, acct int64) []string {
	t.Helper()
	r, err := c.Ring(t.Context(), acct)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range r.Keys() {
		ids = append(ids, k.ID)
	}
	return ids
}

// TestCache_RotationReachesSigningWithinFreshFor: signing reads the
// database once per account while the keys are fresh; a rotation is
// signed with at most FreshFor after it; a failed reload keeps the last
// keys.
func TestCache_RotationReachesSigningWithinFreshFor(t *testing.T) {
	f := newFixture(t)
	acct := f.mustAccount(t)
	clock := &fakeClock{t: time.Now()}
	src := &countingSource{store: f.store, account: acct}
	c := signingkeys.NewCache(src, clock.now)

	first := ringIDs(t, c, acct)
	for range 100 {
		ringIDs(t, c, acct)
	}
	if n := src.count(); n != 1 || len(first) != 1 {
		t.Fatalf("%d loads for 101 signatures (keys %v), want 1", n, first)
	}

	rotated, err := f.store.Rotate(t.Context(), acct, clock.now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(signingkeys.FreshFor)
	if got := ringIDs(t, c, acct); len(got) != 2 || got[0] != rotated[0].ID {
		t.Fatalf("FreshFor after a rotation the ring is %v, want the new key first of two", got)
	}

	src.mu.Lock()
	src.fail = true
	src.mu.Unlock()
	clock.add(signingkeys.FreshFor)
	if got := ringIDs(t, c, acct); len(got) != 2 || got[0] != rotated[0].ID {
		t.Fatalf("with the database down: %v, want the last keys read", got)
	}
}

// TestCache_UnknownAccountFails: no keys, an error (the attempt records
// it), and nothing cached.
func TestCache_UnknownAccountFails(t *testing.T) {
	f := newFixture(t)
	c := signingkeys.NewCache(f.store, nil)
	if _, err := c.Ring(t.Context(), 987654321); !errors.Is(err, signingkeys.ErrNoAccount) {
		t.Fatalf("Ring of an unknown account: %v, want ErrNoAccount", err)
	}
}

// TestCache_ReloadsBusyAccountsInTheBackground: keys older than half of
// FreshFor still sign while a reload runs, and the reload's keys sign
// from then on; keys older than FreshFor are never used.
func TestCache_ReloadsBusyAccountsInTheBackground(t *testing.T) {
	f := newFixture(t)
	acct := f.mustAccount(t)
	clock := &fakeClock{t: time.Now()}
	src := &countingSource{store: f.store, account: acct}
	c := signingkeys.NewCache(src, clock.now)
	first := ringIDs(t, c, acct)
	if _, err := f.store.Rotate(t.Context(), acct, clock.now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.add(signingkeys.FreshFor * 3 / 4)
	if got := ringIDs(t, c, acct); len(got) != 1 || got[0] != first[0] {
		t.Fatalf("while reloading: %v, want the keys read before (%v)", got, first)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(ringIDs(t, c, acct)) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the background reload never landed (%d loads)", src.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := src.count(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
}
