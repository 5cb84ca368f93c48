package activities

import (
	"context"
	"time"
)

// ramp paces a webhook's drain after its breaker closed: in each second
// after the close, at most the breaker's ramp limit of attempts start
// (doubling each second), so a receiver that has just come back is not
// flattened by its backlog.
type ramp struct {
	a        *Activities
	closedAt time.Time
	second   time.Duration // which second after the close usedIn counts
	usedIn   int
}

// rampFor returns the ramp of a webhook whose breaker closed recently
// (inactive otherwise).
func (a *Activities) rampFor(ctx context.Context, subscriptionID string) (*ramp, error) {
	r := &ramp{a: a}
	if a.deps.Breaker.Threshold <= 0 || a.deps.Breaker.RampStart <= 0 {
		return r, nil
	}
	state, err := a.deps.Store.BreakerTimes(ctx, subscriptionID)
	if err != nil {
		return r, nil //nolint:nilerr // the round's own reads report the error
	}
	if state.ClosedAt != nil && a.deps.Now().Sub(*state.ClosedAt) < a.deps.Breaker.RampDuration() {
		r.closedAt = *state.ClosedAt
	}
	return r, nil
}

// active reports whether the drain is still ramping.
func (r *ramp) active() bool {
	return !r.closedAt.IsZero() && r.a.deps.Breaker.RampLimit(r.a.deps.Now().Sub(r.closedAt)) > 0
}

// take returns how many of want may start now, waiting for the next
// second when this one's are spent; false when ctx ended.
func (r *ramp) take(ctx context.Context, want int) (int, bool) {
	for {
		elapsed := r.a.deps.Now().Sub(r.closedAt)
		limit := r.a.deps.Breaker.RampLimit(elapsed)
		if limit == 0 {
			return want, true
		}
		second := elapsed.Truncate(time.Second)
		if second != r.second {
			r.second, r.usedIn = second, 0
		}
		if left := limit - r.usedIn; left > 0 {
			return min(want, left), true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(second + time.Second - elapsed):
		}
	}
}

// used counts attempts started in the current second.
func (r *ramp) used(n int) { r.usedIn += n }
