package activities

import (
	"context"
	"fmt"
	"maps"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/jobhooks/jobhooks/deliveries"
)

// DeliverShardRound is one round of a shard: it reports what earlier
// rounds handed over, then runs the round's pipeline (see pipeline):
// claims of the shard's due deliveries across its webhooks (in turns by
// account, each webhook at most its room under its in-flight limit),
// attempts started as they are claimed and outcomes recorded as they
// arrive, until it has claimed sharedRoundLimit, claimed for
// sharedRoundClaimFor, or found nothing due for the linger. Attempts that
// outlast the patience are handed over and their webhooks move to lanes
// of their own.
func (rs *Rounds) DeliverShardRound(ctx context.Context, in ShardRoundInput) (ShardRoundResult, error) {
	t := rs.tuning
	if in.Shards != t.Shards {
		return ShardRoundResult{Stopped: fmt.Sprintf("the workers run %d shards, not %d", t.Shards, in.Shards)}, nil
	}
	defer keepHeartbeating(ctx)()
	rs.limits.seed(in.Learned)
	res := ShardRoundResult{OnAnyWorker: t.RoundsOnAnyWorker}
	var err error
	if res.Reported, res.Report, err = rs.reportHandedOver(ctx, in.Report); err != nil {
		return ShardRoundResult{}, err
	}
	lease := rs.attemptTimeout + leaseSlack
	// Webhooks and destinations the rooms do not list (none of the round's
	// yet) take at most one webhook's initial limit a claim: a destination's
	// first claim probes with half its initial limit (16 of 32 by default),
	// and a host that refuses above a few answers those before the next
	// claim takes the rest.
	initial := rs.limits.initial()
	claim := func(ctx context.Context, n int, rooms claimRooms) (deliveries.ClaimedPage, error) {
		return rs.store.ClaimShared(ctx, deliveries.SharedClaim{
			Shard: in.Shard, Shards: in.Shards, PerKey: t.PageSize, Limit: n,
			PerWebhook: initial, Rooms: rooms.webhooks, PerDestination: initial, DestinationRooms: rooms.destinations,
			Lease: lease, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID, OrderMaxWait: rs.orderMaxWait,
		})
	}
	p := rs.newPipeline(ctx, claim, recordDeadline(ctx, rs.now().Add(lease)))
	p.claimFor = sharedRoundClaimFor
	p.promise = func(ctx context.Context, d time.Duration) time.Time {
		return rs.promiseClaims(ctx, in.Shard, in.Shards, d)
	}
	p.steady = in.Steady
	// Counted before the first claim: the API leaves a shard it signalled
	// alone until a round begins after that signal (dispatch.Waker).
	if err := rs.store.BeginShardRound(ctx, in.Shard, in.Shards); err != nil {
		return ShardRoundResult{}, err
	}
	if err := p.run(ctx); err != nil {
		return ShardRoundResult{}, err
	}
	res.Outcomes, res.Handed, res.Isolated, res.Ended = p.rec.outcomes, p.handed, p.isolated, p.ended
	res.Limits = rs.reportLimits(ctx, maps.Keys(p.seen))
	res.Destinations = rs.limits.changedDestinations(p.destinations())
	res.Report = append(res.Report, res.Handed...)
	if len(res.Report) > 0 {
		first := res.Report[0].By
		for _, h := range res.Report {
			if h.By.Before(first) {
				first = h.By
			}
		}
		res.ReportIn = max(first.Sub(rs.now()), 0)
	}
	if res.NextDueIn, res.Pending, err = rs.keepPromise(ctx, in, p.claimsUntil); err != nil {
		return ShardRoundResult{}, err
	}
	return res, nil
}

// keepPromise says when the shard's next delivery is due, for a round
// whose promise to claim ends at claimsUntil. A round that ended before
// its promise (it claimed its limit) says work is due at once even when
// none is yet: the next round follows at once, steady, promises as long
// and claims what is committed meanwhile, which nobody woke the shard for.
func (rs *Rounds) keepPromise(ctx context.Context, in ShardRoundInput, claimsUntil time.Time) (time.Duration, bool, error) {
	next, pending, err := rs.store.NextDueShared(ctx, in.Shard, in.Shards)
	if err != nil || (pending && next <= 0) || !rs.now().Before(claimsUntil) {
		return next, pending, err
	}
	return 0, true, nil
}

// promiseClaims promises that the shard's round claims for d
// (Store.PromiseShardClaims): the API does not wake a shard for
// deliveries committed within a promise, and under steady traffic those
// wake-ups were most of Temporal's work (a signal each, buffered in the
// shard's history while its round ran). It returns when the promise ends:
// no earlier than on the database's clock, counted from after the write
// returned. A promise that cannot be written is none: the API wakes the
// shard as before.
//
// A round promises no more than the rest of its claim window: between two
// rounds the API wakes the shard again, and that signal starts the next
// round's workflow task at once, where the timer between rounds
// (workflows.betweenRounds) fired up to a second late.
func (rs *Rounds) promiseClaims(ctx context.Context, shard, shards int, d time.Duration) time.Time {
	if err := rs.store.PromiseShardClaims(ctx, shard, shards, d); err != nil {
		rs.logger.WarnContext(ctx, "a shard round claims without a promise; the API wakes its shard for every event", "error", err.Error())
		return time.Time{}
	}
	return rs.now().Add(d)
}

// reportHandedOver returns the recorded outcomes of handed-over attempts,
// those past their time as lost, and those still to report.
func (rs *Rounds) reportHandedOver(ctx context.Context, handed []HandedOver) (reported []Outcome, still []HandedOver, err error) {
	if len(handed) == 0 {
		return nil, nil, nil
	}
	refs := make([]deliveries.AttemptRef, len(handed))
	for i, h := range handed {
		refs[i] = deliveries.AttemptRef{DeliveryID: h.DeliveryID, Attempt: h.Attempt}
	}
	recorded, err := rs.store.RecordedAttempts(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	found := make(map[deliveries.AttemptRef]deliveries.RecordedAttempt, len(recorded))
	for _, r := range recorded {
		found[r.AttemptRef] = r
	}
	now := rs.now()
	for i, h := range handed {
		r, ok := found[refs[i]]
		switch {
		case ok:
			o := Outcome{DeliveryID: h.DeliveryID, Attempt: h.Attempt, Status: r.DeliveryStatus, StatusCode: r.StatusCode,
				Error: outcomeError(r.ErrorMessage), Duration: r.Duration}
			if !deliveries.IsFinal(r.DeliveryStatus) {
				o.RetryIn = r.RetryIn
			}
			reported = append(reported, o)
		case now.After(h.By):
			reported = append(reported, Outcome{DeliveryID: h.DeliveryID, Attempt: h.Attempt, Status: "lost",
				Error: "the outcome of this handed-over attempt was not recorded (its worker stopped); it is attempted again once its lease ends"})
		default:
			still = append(still, h)
		}
	}
	return reported, still, nil
}

// roundHeartbeat is how often a round that runs as an activity any worker
// takes (DELIVERY_SHARD_ROUNDS=any-worker) tells Temporal it is alive; the
// shard's workflow gives it shardRoundHeartbeatTimeout
// (workflows/shard.go), after which another worker runs the round again.
const roundHeartbeat = 5 * time.Second

// keepHeartbeating heartbeats every roundHeartbeat while a round runs as
// an activity (not a local one, which lives in its workflow task) and
// returns what stops it.
func keepHeartbeating(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(roundHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
