package activities

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// ShardRoundInput asks for one round of a shard: shard Shard of Shards.
// Report lists attempts that earlier rounds handed over, whose recorded
// outcomes this round reports.
type ShardRoundInput struct {
	Shard         int
	Shards        int
	WorkflowID    string
	WorkflowRunID string
	Report        []HandedOver `json:",omitempty"`
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
	// has moved from the initial one.
	Limits []WebhookLimit `json:",omitempty"`
	// Pending: the shard has deliveries not final; the next is due in
	// NextDueIn (zero or negative: now).
	Pending   bool
	NextDueIn time.Duration
	// Stopped, when set, says why this shard has nothing to do ever (the
	// workers run another number of shards).
	Stopped string `json:",omitempty"`
}

// sharedRoundLimit bounds the attempts of one shard round: its marker in
// the history stays a few hundred KB at most.
const sharedRoundLimit = 1000

// gatherMax bounds how long a round lets deliveries gather after a small
// page: what it adds to a delivery's latency under a trickle of events.
const gatherMax = 20 * time.Millisecond

// handOverMargin is added to an attempt's deadline to bound when its
// outcome must be recorded.
const handOverMargin = 5 * time.Second

// DeliverShardRound is one round of a shard: it reports what earlier
// rounds handed over, then runs the round's pipeline (see pipeline):
// claims of the shard's due deliveries across its webhooks (in turns by
// account, each webhook at most its room under its in-flight limit),
// attempts started as they are claimed and outcomes recorded as they
// arrive, until it has claimed sharedRoundLimit or found nothing due for
// the linger. Attempts that outlast the patience are handed over and
// their webhooks move to lanes of their own.
func (a *Activities) DeliverShardRound(ctx context.Context, in ShardRoundInput) (ShardRoundResult, error) {
	t := a.deps.Tuning
	if in.Shards != t.Shards {
		return ShardRoundResult{Stopped: fmt.Sprintf("the workers run %d shards, not %d", t.Shards, in.Shards)}, nil
	}
	var res ShardRoundResult
	var err error
	if res.Reported, res.Report, err = a.reportHandedOver(ctx, in.Report); err != nil {
		return ShardRoundResult{}, err
	}
	lease := a.deps.AttemptTimeout + leaseSlack
	initial := a.deps.InFlight.Initial()
	claim := func(ctx context.Context, n int, rooms claimRooms) (deliveries.ClaimedPage, error) {
		return a.deps.Store.ClaimShared(ctx, deliveries.SharedClaim{
			Shard: in.Shard, Shards: in.Shards, PerKey: t.PageSize, Limit: n,
			PerWebhook: initial, Rooms: rooms.webhooks, PerDestination: initial, DestinationRooms: rooms.destinations,
			Lease: lease, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID, OrderMaxWait: a.deps.OrderMaxWait,
		})
	}
	p := a.newPipeline(ctx, claim, recordDeadline(ctx, a.deps.Now().Add(lease)))
	if err := p.run(ctx); err != nil {
		return ShardRoundResult{}, err
	}
	res.Outcomes, res.Handed, res.Isolated, res.Ended = p.rec.outcomes, p.handed, p.isolated, p.ended
	res.Limits = a.reportLimits(ctx, maps.Keys(p.seen))
	res.Report = append(res.Report, res.Handed...)
	if len(res.Report) > 0 {
		first := res.Report[0].By
		for _, h := range res.Report {
			if h.By.Before(first) {
				first = h.By
			}
		}
		res.ReportIn = max(first.Sub(a.deps.Now()), 0)
	}
	res.NextDueIn, res.Pending, err = a.deps.Store.NextDueShared(ctx, in.Shard, in.Shards)
	if err != nil {
		return ShardRoundResult{}, err
	}
	return res, nil
}

// recordHandedOver records the outcome of an attempt that outlived its
// round's patience, for a later round to report, trying until shortly
// before its claim's lease ends.
func (a *Activities) recordHandedOver(c deliveries.Claimed, rec deliveries.AttemptRecord, late pendingLate, leasedUntil time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), leasedUntil)
	defer cancel()
	if _, err := a.recordAndObserve(ctx, []deliveries.Claimed{c}, []deliveries.AttemptRecord{rec}, []pendingLate{late}, leasedUntil); err != nil {
		// The delivery is attempted again once its lease ends.
		a.deps.Logger.WarnContext(ctx, "cannot record a handed-over attempt", "delivery_id", c.ID, "error", err.Error())
	}
}

// reportHandedOver returns the recorded outcomes of handed-over attempts,
// those past their time as lost, and those still to report.
func (a *Activities) reportHandedOver(ctx context.Context, handed []HandedOver) (reported []Outcome, still []HandedOver, err error) {
	if len(handed) == 0 {
		return nil, nil, nil
	}
	refs := make([]deliveries.AttemptRef, len(handed))
	for i, h := range handed {
		refs[i] = deliveries.AttemptRef{DeliveryID: h.DeliveryID, Attempt: h.Attempt}
	}
	recorded, err := a.deps.Store.RecordedAttempts(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	found := make(map[deliveries.AttemptRef]deliveries.RecordedAttempt, len(recorded))
	for _, r := range recorded {
		found[r.AttemptRef] = r
	}
	now := a.deps.Now()
	for i, h := range handed {
		r, ok := found[refs[i]]
		switch {
		case ok:
			o := Outcome{DeliveryID: h.DeliveryID, Attempt: h.Attempt, Status: r.DeliveryStatus, StatusCode: r.StatusCode,
				Error: r.ErrorMessage, Duration: r.Duration}
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

// wakeOwnLanes starts (or wakes) the own lanes of webhooks; one that
// cannot be woken now is woken by the sweeper.
func (a *Activities) wakeOwnLanes(ctx context.Context, lanes []deliveries.RoutedWebhook) {
	if a.deps.Waker == nil || len(lanes) == 0 {
		return
	}
	for i := range lanes {
		lanes[i].Route = deliveries.RouteOwn
	}
	if err := a.deps.Waker.WakeNow(ctx, lanes); err != nil {
		a.deps.Logger.WarnContext(ctx, "cannot start a webhook's own lane; the sweeper will", "error", err.Error())
	}
}
