package activities

import (
	"context"
	"math"
)

// lanePace is what paces a webhook's own lane: its rate limit's credit
// (max_requests_per_second, carried from round to round in RoundResult.Rate)
// and the drain ramp after its breaker closed. It is the one place a lane
// asks how many attempts may start now, counts what started, and learns
// when it may start more.
type lanePace struct {
	rate *rateLimiter // nil: not rate limited
	ramp *ramp
}

// lanePacing loads a lane round's pace: the drain ramp of a breaker closed
// lately, and the rate limit's credit refilled since the last round.
func (rs *Rounds) lanePacing(ctx context.Context, in RoundInput) (*lanePace, error) {
	ramp, err := rs.ramps.rampFor(ctx, in.SubscriptionID)
	if err != nil {
		return nil, err
	}
	rate, err := rs.rateFor(ctx, in.SubscriptionID, in.Rate)
	if err != nil {
		return nil, err
	}
	return &lanePace{rate: rate, ramp: ramp}, nil
}

// page is how many of want the lane's next page may take: what the rate
// limit's credit allows (0: none now), waiting on the drain ramp.
func (p *lanePace) page(ctx context.Context, want int) (int, error) {
	if p.rate != nil {
		if want = min(want, p.rate.allowance()); want == 0 {
			return 0, nil
		}
	}
	if p.ramp.active() {
		var ok bool
		if want, ok = p.ramp.take(ctx, want); !ok {
			return 0, ctx.Err()
		}
	}
	return want, nil
}

// spent counts a page's n attempts against the rate limit and the ramp,
// and gives the ramp back what the page took (taken) but did not attempt.
func (p *lanePace) spent(taken, n int) {
	p.ramp.used(taken, n)
	if p.rate != nil {
		p.rate.spend(n)
	}
}

// carry puts the rate limit's credit in the round's result for the next
// round, and holds a pending next delivery until the credit allows it.
func (p *lanePace) carry(res *RoundResult) {
	if p.rate == nil {
		return
	}
	res.Rate = p.rate.state()
	if res.Pending {
		res.NextDueIn = max(res.NextDueIn, p.rate.wait())
	}
}

// rateFor returns the limiter of a webhook with a rate limit (nil: none),
// its credit refilled since the last round: limit a second, at most a
// second's worth (or one attempt) banked.
func (rs *Rounds) rateFor(ctx context.Context, webhookID string, last *RateState) (*rateLimiter, error) {
	limit, ok, err := rs.send.settings.maxRequestsPerSecond(ctx, webhookID)
	if err != nil || !ok || limit <= 0 {
		return nil, err
	}
	burst := math.Max(1, limit)
	r := &rateLimiter{limit: limit, burst: burst, credit: burst, at: rs.now(), now: rs.now}
	if last != nil && !last.At.IsZero() {
		r.credit, r.at = last.Credit, last.At
	}
	r.refill()
	return r, nil
}
