package activities

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/inflight"
)

// Rounds are the delivery rounds: a shard's (DeliverShardRound, shared by
// the webhooks of its lane keys) and a webhook's own lane's (DeliverDue).
// Both claim what may go now, attempt it through one pipeline and record
// the outcomes as they arrive. Register it with the worker; build it with
// New, which shares its caches with the other activities.
type Rounds struct {
	store          *deliveries.Store
	logger         *slog.Logger
	now            func() time.Time
	tuning         Tuning
	attemptTimeout time.Duration
	// orderMaxWait bounds how long a delivery waits for an earlier event
	// of its run (0: deliveries.DefaultOrderMaxWait).
	orderMaxWait time.Duration
	// schedule spaces a failed delivery's attempts.
	schedule deliveries.Schedule
	// breaker is the endpoint breaker's policy: an own lane's probes.
	breaker deliveries.Breaker
	// attempts is the worker's pool of attempt slots.
	attempts *fairshare.Pool
	// observeLimits, when set, sees the in-flight limits each round
	// reports (metrics).
	observeLimits func(ctx context.Context, limits []WebhookLimit)

	send      *sender
	outcomes  *outcomeWriter
	observer  *attemptObserver
	incidents *incidentFollowUp
	wake      wakeups
	// fences caches webhook states read again before late attempts;
	// ramps count what drains after a breaker closed have sent; limits
	// gate attempts by their webhook's and destination's in-flight limits.
	fences *fenceStates
	ramps  *rampUses
	limits endpointLimits
	// answers keeps how long recent shared attempts took to answer: the
	// patience follows them (patience.go).
	answers *answerTimes
	// laneWakes wakes the lanes of webhooks moved for slow attempts once
	// those attempts have ended.
	laneWakes *laneWakes
	// handed records the outcomes of handed-over attempts, worker-wide.
	handed *handedWrites
	// outstanding counts the rounds' attempts still running (an attempt
	// handed over outlives its round) and the outcome writes a round that
	// gave up left behind (Drain waits for them).
	outstanding sync.WaitGroup
}

// Drain waits, at most until ctx ends, for the attempts rs started (those
// handed over included) to finish and be recorded, and for the outcome
// writes of rounds that gave up (a worker's shutdown). A function, not a
// method: every method of Rounds is an activity.
func Drain(ctx context.Context, rs *Rounds) {
	done := make(chan struct{})
	go func() { rs.outstanding.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Tuning is how a worker's rounds take and make deliveries.
type Tuning struct {
	// Shards is how many shard workflows share the lane keys
	// (DELIVERY_SHARDS); a shard of another number stops.
	Shards int
	// PageSize bounds the deliveries one claim takes (DELIVERY_PAGE_SIZE).
	PageSize int
	// MaxInFlight bounds a webhook's adaptive in-flight limit (inflight;
	// DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK), and a slow lane's rounds.
	MaxInFlight int
	// Linger is how long a round keeps looking for newly due deliveries
	// before it returns (DELIVERY_ROUND_LINGER).
	Linger time.Duration
	// ClaimGather bounds how long a shard's round lets deliveries gather
	// after a claim that found a few (DELIVERY_CLAIM_GATHER): what it adds
	// to a delivery's latency under a steady stream, and what spares the
	// database a claim and a record for every few deliveries.
	ClaimGather time.Duration
	// LaneIdle is how long a webhook's own lane waits with nothing pending
	// before the webhook goes back to its shard (DELIVERY_LANE_IDLE_TIMEOUT).
	LaneIdle time.Duration
	// Patience is how long an attempt of a shared round may run: one still
	// running then is handed over and its webhook gets its own lane
	// (DELIVERY_SHARED_PATIENCE).
	Patience time.Duration
	// RoundsOnAnyWorker: a shard's next round is an activity any worker
	// takes rather than a local activity (DELIVERY_SHARD_ROUNDS=any-worker;
	// ShardRoundResult.OnAnyWorker).
	RoundsOnAnyWorker bool
}

func (t Tuning) withDefaults() Tuning {
	if t.Shards <= 0 {
		t.Shards = 2
	}
	if t.PageSize <= 0 {
		t.PageSize = 200
	}
	if t.MaxInFlight <= 0 {
		t.MaxInFlight = inflight.DefaultMaxLimit
	}
	if t.LaneIdle <= 0 {
		t.LaneIdle = time.Minute
	}
	if t.ClaimGather <= 0 {
		t.ClaimGather = 20 * time.Millisecond
	}
	if t.Patience <= 0 {
		t.Patience = 500 * time.Millisecond
	}
	return t
}

// ShardRoundInput asks for one round of a shard: shard Shard of Shards.
// Report lists attempts that earlier rounds handed over, whose recorded
// outcomes this round reports.
type ShardRoundInput struct {
	Shard         int
	Shards        int
	WorkflowID    string
	WorkflowRunID string
	Report        []HandedOver `json:",omitempty"`
	// Steady: the shard's last round ended with deliveries due at once
	// (they arrive as fast as rounds go). This round promises to claim for
	// its window (promiseClaims) at its start rather than once it has
	// found work for a while; the API does not wake the shard while that
	// promise holds.
	Steady bool `json:",omitempty"`
	// Learned are limits the shard's earlier rounds learned: the round
	// starts the webhooks and destinations its worker does not hold there.
	Learned LearnedLimits `json:",omitzero"`
}

// HandedOver is an attempt still running when its round's patience ended:
// it goes on outside the round, records its outcome when it ends, and a
// later round of the same shard reports that outcome.
type HandedOver struct {
	DeliveryID string
	Attempt    int32
	WebhookID  string
	// By is when its outcome is recorded at the latest (the attempt's
	// deadline, with a margin); after that it is reported lost, and the
	// delivery is attempted again once its lease ends.
	By time.Time
}

// ShardRoundResult is a shard round's outcomes and what the shard should do
// next.
type ShardRoundResult struct {
	Outcomes []Outcome
	// Handed are this round's attempts still running when its patience
	// ended, and Isolated the webhooks that moved to their own lanes for it.
	Handed   []HandedOver `json:",omitempty"`
	Isolated []string     `json:",omitempty"`
	// Reported are the outcomes of attempts handed over by earlier rounds,
	// recorded since (or lost, Error says so).
	Reported []Outcome `json:",omitempty"`
	// Report is what the shard carries to a later round: handed-over
	// attempts not recorded yet, the first due for a report in ReportIn.
	Report   []HandedOver  `json:",omitempty"`
	ReportIn time.Duration `json:",omitempty"`
	// Ended counts deliveries ended because their webhook was deactivated
	// (skipped) or deleted (cancelled).
	Ended int `json:",omitempty"`
	// Limits are the in-flight limits of the round's webhooks whose limit
	// has moved from the initial one, and Destinations the same of their
	// destinations.
	Limits       []WebhookLimit     `json:",omitempty"`
	Destinations []DestinationLimit `json:",omitempty"`
	// Pending: the shard has deliveries not final; the next is due in
	// NextDueIn (zero or negative: now). Also due now when the round
	// ended before its promise to claim (keepPromise).
	Pending   bool
	NextDueIn time.Duration
	// Stopped, when set, says why this shard has nothing to do ever (the
	// workers run another number of shards).
	Stopped string `json:",omitempty"`
	// OnAnyWorker: the shard's next round is an activity any worker takes
	// (the workers' DELIVERY_SHARD_ROUNDS), not a local activity. The
	// workflow reads it from this result, so the choice is in its history.
	OnAnyWorker bool `json:",omitempty"`
}

// RoundInput asks for one round of a webhook's own lane: take its due
// deliveries, a page at a time (rounds of its in-flight bound when Slow),
// attempt them within its in-flight limit, record. The tuning is the
// worker's.
type RoundInput struct {
	SubscriptionID string
	AccountID      int64
	// Slow: the last round had an attempt of SlowAttempt or more.
	Slow          bool
	WorkflowID    string
	WorkflowRunID string
	// Rate is the credit the last round left a rate-limited webhook.
	Rate *RateState `json:",omitempty"`
}

// RoundResult is a round's outcomes and what the lane should do next.
type RoundResult struct {
	Outcomes []Outcome
	// Pending: some delivery is not final; the next is due in NextDueIn
	// (zero or negative: now).
	Pending   bool
	NextDueIn time.Duration
	// Stopped, when set, says why the lane has nothing more to do ever:
	// the webhook was deleted or deactivated, and what it had pending was
	// cancelled.
	Stopped string `json:",omitempty"`
	// IdleFor is how long the lane waits with nothing pending before its
	// webhook goes back to its shard (the worker's setting).
	IdleFor time.Duration `json:",omitempty"`
	// Breaker, when set, is the webhook's open breaker: the round sent at
	// most its probe, and NextDueIn is when the next one goes.
	Breaker *BreakerReport `json:",omitempty"`
	// Rate, when set, is a rate-limited webhook's credit for the next
	// round; NextDueIn is then no earlier than its next attempt may start.
	Rate *RateState `json:",omitempty"`
	// Limit is the webhook's in-flight limit when it has moved from the
	// initial one.
	Limit *WebhookLimit `json:",omitempty"`
}

// Slowest is the longest attempt of the round.
func (r RoundResult) Slowest() time.Duration {
	var d time.Duration
	for _, o := range r.Outcomes {
		d = max(d, o.Duration)
	}
	return d
}

// BreakerReport is a held webhook's breaker as its lane's round saw it.
type BreakerReport struct {
	OpenedAt     time.Time
	NextProbeAt  time.Time
	FailedProbes int `json:",omitempty"`
	Backlog      int64
}

// leaseSlack is what a claim's lease adds to one attempt's timeout. Rounds
// of one shard or lane run one after another, so the lease only keeps a
// round that runs again after its worker died (its WFT retried elsewhere)
// from sending what the dead worker may have sent; short, so those
// deliveries come back within seconds. A worker that lost its task but still runs may overlap
// with the retry: an extra send, with the same delivery id.
const leaseSlack = 5 * time.Second

// Polling while a round lingers.
const (
	lingerPollFirst = 5 * time.Millisecond
	lingerPollMax   = 80 * time.Millisecond
)

// SlowAttempt is an attempt slow enough that its lane takes rounds of its
// in-flight bound only, so a round never waits through many waves of slow attempts
// before its outcomes are recorded.
const SlowAttempt = time.Second
