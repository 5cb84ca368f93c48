package deliveries_test

import (
	"errors"
	"testing"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestRoutes_Machine: the changes of route the table allows, and those it
// refuses; SetRoute refuses the latter before it touches the database (its
// store here has none).
func TestRoutes_Machine(t *testing.T) {
	const (
		shared, own, paused, held = deliveries.RouteShared, deliveries.RouteOwn, deliveries.RoutePaused, deliveries.RouteHeld
	)
	tests := []struct {
		name    string
		from    []string
		to      string
		allowed bool
	}{
		{"SlowOrRateLimitedOrBreakerToOwnLane", []string{shared}, own, true},
		{"IdleLaneBackToShard", []string{own}, shared, true},
		{"PauseFromEither", []string{shared, own}, paused, true},
		{"ResumeToShard", []string{paused}, shared, true},
		{"ResumeRateLimitedToOwnLane", []string{paused}, own, true},
		{"BreakerHoldsFromShard", []string{shared}, held, true},
		{"BreakerHoldsFromOwnLane", []string{own}, held, true},
		{"BreakerClosedToOwnLane", []string{held}, own, true},
		{"BreakerResetToShard", []string{held}, shared, true},

		{"PauseHeld", []string{held}, paused, false},
		{"PauseHeldAmongOthers", []string{shared, own, held}, paused, false},
		{"HoldPaused", []string{paused}, held, false},
		{"SharedToShared", []string{shared}, shared, false},
		{"OwnToOwn", []string{own}, own, false},
		{"NoFrom", nil, own, false},
		{"UnknownFrom", []string{"elsewhere"}, shared, false},
		{"UnknownTo", []string{shared}, "elsewhere", false},
	}
	store := deliveries.NewStore(nil) // no database: a refused change must not reach one
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := len(tt.from) > 0
			for _, from := range tt.from {
				ok = ok && len(deliveries.Allowed(from, tt.to)) > 0
			}
			if ok != tt.allowed {
				t.Fatalf("%v -> %s allowed: %v, want %v", tt.from, tt.to, ok, tt.allowed)
			}
			if tt.allowed {
				return
			}
			_, err := store.SetRoute(t.Context(), deliveries.RouteChange{IDs: []string{"wsu_x"}, From: tt.from, To: tt.to})
			var refused deliveries.RouteChangeError
			if !errors.As(err, &refused) {
				t.Errorf("SetRoute %v -> %s: %v, want a RouteChangeError", tt.from, tt.to, err)
			}
		})
	}
}

// TestRoutes_Table: every transition is between routes, says why and who
// makes it, and none puts a webhook with a rate limit on the shared route:
// each into 'shared' is NoRateLimit (and the transitions of a pair agree,
// since SetRoute applies the guard by pair).
func TestRoutes_Table(t *testing.T) {
	type pair struct{ from, to string }
	guard := map[pair]bool{}
	for _, tr := range deliveries.Transitions {
		p := pair{tr.From, tr.To}
		switch {
		case !deliveries.ValidRoute(tr.From) || !deliveries.ValidRoute(tr.To):
			t.Errorf("%s -> %s: not a route", tr.From, tr.To)
		case tr.From == tr.To:
			t.Errorf("%s -> %s: not a change", tr.From, tr.To)
		case tr.Why == "" || tr.By == "":
			t.Errorf("%s -> %s: says no why or by", tr.From, tr.To)
		case tr.To == deliveries.RouteShared && !tr.NoRateLimit:
			t.Errorf("%s -> shared (%s): would put a rate-limited webhook on the shared route", tr.From, tr.Why)
		}
		if g, seen := guard[p]; seen && g != tr.NoRateLimit {
			t.Errorf("%s -> %s: transitions disagree on NoRateLimit", tr.From, tr.To)
		}
		guard[p] = tr.NoRateLimit
	}
}
