package activities

import (
	"math"
	"time"
)

// RateState is a rate-limited webhook's credit between the rounds of its
// own lane (max_requests_per_second of its delivery settings): credit for
// Credit attempts at At. The lane carries it from round to round, so the
// limit holds across workers (one lane per webhook, one round at a time)
// and what is over the rate waits on the lane's durable timer, pending in
// the database: in no worker slot, and never counted as failed.
type RateState struct {
	Credit float64
	At     time.Time
}

// rateLimiter spends a rate-limited webhook's credit within one round,
// refilled continuously: limit a second, at most burst banked.
type rateLimiter struct {
	limit  float64 // attempts a second
	burst  float64
	credit float64
	at     time.Time // when credit was last refilled
	now    func() time.Time
}

// refill adds the credit earned since the last refill.
func (r *rateLimiter) refill() {
	now := r.now()
	if now.After(r.at) {
		r.credit = math.Min(r.burst, r.credit+r.limit*now.Sub(r.at).Seconds())
		r.at = now
	}
}

// allowance is how many attempts may start now.
func (r *rateLimiter) allowance() int {
	r.refill()
	return int(math.Floor(r.credit + 1e-9))
}

// spend takes n attempts' credit.
func (r *rateLimiter) spend(n int) { r.credit -= float64(n) }

// wait is how long until one more attempt may start.
func (r *rateLimiter) wait() time.Duration {
	r.refill()
	if r.credit >= 1 {
		return 0
	}
	return time.Duration((1 - r.credit) / r.limit * float64(time.Second))
}

// state is what the lane carries to its next round.
func (r *rateLimiter) state() *RateState {
	r.refill()
	return &RateState{Credit: r.credit, At: r.at}
}
