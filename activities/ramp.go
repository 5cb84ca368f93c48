package activities

import (
	"context"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// ramp paces a webhook's drain after its breaker closed: in each second
// after the close, at most the breaker's ramp limit of attempts start
// (doubling each second), so a receiver that has just come back is not
// flattened by its backlog. What a second allows is counted per worker
// (rampUses), across the lane's rounds, and the seconds are counted on the
// worker's clock from how long ago the database says the breaker closed.
type ramp struct {
	uses     *rampUses
	closedAt time.Time // on the worker's clock; zero: not ramping
	use      *rampUse
}

// rampUse is what the current second of a webhook's ramp has allowed.
type rampUse struct {
	closedAt time.Time // the close it counts for (the worker's clock)
	second   time.Duration
	used     int
}

// rampUses are the worker's ramps, by webhook: one per worker, shared by
// its rounds.
type rampUses struct {
	store   *deliveries.Store
	breaker deliveries.Breaker
	now     func() time.Time

	mu   sync.Mutex
	uses map[string]*rampUse
}

// rampUsesMax bounds the ramps kept; each lasts a few seconds.
const rampUsesMax = 10000

// rampFor returns the ramp of a webhook whose breaker closed recently
// (inactive otherwise).
func (u *rampUses) rampFor(ctx context.Context, subscriptionID string) (*ramp, error) {
	r := &ramp{uses: u}
	if u.breaker.Threshold <= 0 || u.breaker.RampStart <= 0 {
		return r, nil
	}
	state, err := u.store.BreakerTimes(ctx, subscriptionID)
	if err != nil {
		return r, nil //nolint:nilerr // the round's own reads report the error
	}
	if state.ClosedAt == nil || state.ClosedAgo >= u.breaker.RampDuration() {
		return r, nil
	}
	r.closedAt = u.now().Add(-state.ClosedAgo).Truncate(time.Millisecond)
	r.use = u.use(subscriptionID, r.closedAt)
	return r, nil
}

// use returns the webhook's ramp use for the close at closedAt (a close
// measured again within a second is the same close).
func (u *rampUses) use(webhookID string, closedAt time.Time) *rampUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	if cur, ok := u.uses[webhookID]; ok && cur.closedAt.Sub(closedAt).Abs() < time.Second {
		return cur
	}
	if u.uses == nil || len(u.uses) >= rampUsesMax {
		u.uses = map[string]*rampUse{}
	}
	cur := &rampUse{closedAt: closedAt, second: -1}
	u.uses[webhookID] = cur
	return cur
}

// active reports whether the drain is still ramping.
func (r *ramp) active() bool {
	return !r.closedAt.IsZero() && r.uses.breaker.RampLimit(r.uses.now().Sub(r.closedAt)) > 0
}

// take returns how many of want may start now, counting them as used,
// waiting for the next second when this one's are spent; false when ctx
// ended.
func (r *ramp) take(ctx context.Context, want int) (int, bool) {
	for {
		n, wait := r.allow(want)
		if wait == 0 {
			return n, true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(wait):
		}
	}
}

// allow takes what the current second still allows of want, or says how
// long until the next second.
func (r *ramp) allow(want int) (int, time.Duration) {
	r.uses.mu.Lock()
	defer r.uses.mu.Unlock()
	elapsed := r.uses.now().Sub(r.closedAt)
	limit := r.uses.breaker.RampLimit(elapsed)
	if limit == 0 {
		return want, 0
	}
	second := elapsed.Truncate(time.Second)
	if second != r.use.second {
		r.use.second, r.use.used = second, 0
	}
	if left := limit - r.use.used; left > 0 {
		n := min(want, left)
		r.use.used += n
		return n, 0
	}
	return 0, second + time.Second - elapsed
}

// used gives back what a page took but did not attempt (n of them were).
func (r *ramp) used(taken, n int) {
	if r.use == nil || taken <= n {
		return
	}
	r.uses.mu.Lock()
	defer r.uses.mu.Unlock()
	r.use.used = max(r.use.used-(taken-n), 0)
}
