package activities

import (
	"testing"
	"time"
)

// TestKeepPromise_ARoundThatEndsBeforeItsPromiseHasTheNextFollow: a round
// that stopped claiming before its promise ended (it claimed its limit)
// says work is due at once even when none is, so the next round follows
// at once and claims what is committed meanwhile (nobody woke the shard
// for it); once its promise has ended it says what is due.
func TestKeepPromise_ARoundThatEndsBeforeItsPromiseHasTheNextFollow(t *testing.T) {
	f := newRateFixture(t, nil)
	f.webhook("https://example.com/promised")
	in := ShardRoundInput{Shard: 0, Shards: 1}
	for _, tc := range []struct {
		name        string
		claimsUntil time.Time
		pending     bool
	}{
		{"promise holds", time.Now().Add(time.Minute), true},
		{"promise ended", time.Now().Add(-time.Millisecond), false},
		{"no promise", time.Time{}, false},
	} {
		next, pending, err := f.acts.Rounds.keepPromise(t.Context(), in, tc.claimsUntil)
		if err != nil || pending != tc.pending || (pending && next > 0) {
			t.Errorf("%s, nothing due: pending %v, next in %s (err %v); want pending %v at once", tc.name, pending, next, err, tc.pending)
		}
	}
}
