package activities

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// DeliverDue is one round of a webhook's own lane: it takes pages of the
// webhook's due deliveries (each counts an attempt and is leased), POSTs
// each signed body within the webhook's in-flight limit and with a slot of
// the worker's shared pool each, and records the outcomes in small groups
// as they arrive, until it has attempted a page's worth or found nothing
// due for the linger; then it says when the next delivery is due. A webhook deleted or
// deactivated has its pending deliveries ended and stops its lane.
func (rs *Rounds) DeliverDue(ctx context.Context, in RoundInput) (RoundResult, error) {
	t := rs.tuning
	limit := t.PageSize
	if in.Slow {
		limit = t.MaxInFlight
	}
	res := RoundResult{IdleFor: t.LaneIdle}
	pace, err := rs.lanePacing(ctx, in)
	if err != nil {
		return RoundResult{}, err
	}
	lingerUntil := rs.now().Add(t.Linger)
	poll := lingerPollFirst
	for attempted := 0; attempted < limit; {
		target, err := rs.laneTarget(ctx, in.SubscriptionID)
		if err != nil {
			return RoundResult{}, err
		}
		if target.Deleted || !target.Active {
			res.Stopped, err = rs.endInactive(ctx, target)
			return res, err
		}
		if target.Route != deliveries.RouteHeld && attempted == 0 {
			// Deliveries left held after the breaker closed (a release that
			// failed, an event ingested as it closed) go now.
			if _, err := rs.store.ReleaseHeld(ctx, in.SubscriptionID); err != nil {
				return RoundResult{}, err
			}
		}
		if target.Route == deliveries.RouteHeld {
			if err := rs.breakerStep(ctx, in, target, &res); err != nil {
				return RoundResult{}, err
			}
			if res.Breaker != nil {
				return rs.withIncident(ctx, in.SubscriptionID, res)
			}
			pace.ramp, err = rs.ramps.rampFor(ctx, in.SubscriptionID) // the probe closed it: drain on the ramp
			if err != nil {
				return RoundResult{}, err
			}
			continue
		}
		page, err := pace.page(ctx, min(limit-attempted, t.PageSize))
		if err != nil {
			return RoundResult{}, err
		}
		if page == 0 {
			break // over the rate: the lane's timer waits for credit
		}
		n, err := rs.deliverLanePage(ctx, in, page, &res)
		pace.spent(page, n)
		if err != nil {
			return RoundResult{}, err
		}
		attempted += n
		if n > 0 {
			if res.Slowest() >= SlowAttempt {
				break // let the lane shrink its rounds
			}
			lingerUntil, poll = rs.now().Add(t.Linger), lingerPollFirst
			continue
		}
		if !rs.now().Before(lingerUntil) {
			break
		}
		// Nothing due: look again shortly, so deliveries that arrive in a
		// stream are taken without a wake-up through Temporal each.
		select {
		case <-ctx.Done():
			return RoundResult{}, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, lingerPollMax)
	}
	return rs.laneNext(ctx, in.SubscriptionID, pace, res)
}

// laneNext says when the lane's next delivery is due (no earlier than its
// pace lets it start) and follows its incident.
func (rs *Rounds) laneNext(ctx context.Context, subscriptionID string, pace *lanePace, res RoundResult) (RoundResult, error) {
	var err error
	res.NextDueIn, res.Pending, err = rs.store.NextDue(ctx, subscriptionID)
	if err != nil {
		return RoundResult{}, err
	}
	pace.carry(&res)
	return rs.withIncident(ctx, subscriptionID, res)
}

// endInactive ends the pending deliveries of a webhook deleted (cancelled) or
// deactivated (skipped, and its breaker forgotten), and says why its lane
// stops.
func (rs *Rounds) endInactive(ctx context.Context, target deliveries.WebhookTarget) (string, error) {
	status, reason := deliveries.StatusSkipped, "the webhook was inactive"
	if target.Deleted {
		status, reason = deliveries.StatusCancelled, "the webhook was deleted"
	}
	if _, err := rs.store.EndPending(ctx, target.ID, status, reason); err != nil {
		return "", err
	}
	if !target.Deleted {
		if err := rs.store.ResetBreaker(ctx, target.ID); err != nil {
			return "", err
		}
	}
	return reason, nil
}

// laneTarget loads the lane's webhook as it is now (Deleted when gone).
func (rs *Rounds) laneTarget(ctx context.Context, id string) (deliveries.WebhookTarget, error) {
	target, err := rs.store.ReadTarget(ctx, id, rs.now)
	switch {
	case errors.Is(err, deliveries.ErrSubscriptionGone):
		target, err = deliveries.WebhookTarget{ID: id, Deleted: true, ObservedAt: target.ObservedAt}, nil
	case err != nil:
		return deliveries.WebhookTarget{}, err
	}
	return target, nil
}

// withIncident follows the webhook's incident, if one goes on (announce
// it, end it), and keeps the lane until it is over: the lane looks again
// when the incident is next due a step.
func (rs *Rounds) withIncident(ctx context.Context, subscriptionID string, res RoundResult) (RoundResult, error) {
	state, err := rs.store.BreakerTimes(ctx, subscriptionID)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		return res, nil
	}
	if err != nil {
		return RoundResult{}, err
	}
	wait, going := rs.incidents.incidentStep(ctx, state)
	if !going {
		return res, nil
	}
	wait = max(wait, time.Millisecond)
	if !res.Pending || wait < res.NextDueIn {
		res.Pending, res.NextDueIn = true, wait
	}
	return res, nil
}

// deliverLanePage claims at most limit of the webhook's due deliveries
// (and at most its room under its in-flight limit), then loads the
// webhook (so a rotation answered before the claim signs them), attempts
// them through the round pipeline shard rounds use, waiting for every
// attempt (a lane is where slow receivers are waited for), and records
// their outcomes as they arrive; it returns how many it attempted.
func (rs *Rounds) deliverLanePage(ctx context.Context, in RoundInput, limit int, res *RoundResult) (int, error) {
	lease := rs.attemptTimeout + leaseSlack
	claimed := false
	claim := func(ctx context.Context, n int, _ claimRooms) (deliveries.ClaimedPage, error) {
		if claimed {
			return deliveries.ClaimedPage{}, nil // one page a call
		}
		claimed = true
		// Only what may go now: the webhook's room (its attempts handed
		// over by its shard still count).
		return rs.claimLanePage(ctx, in, min(n, limit, max(rs.limits.webhookRoom(in.SubscriptionID), 1)), lease)
	}
	p := rs.newPipeline(ctx, claim, recordDeadline(ctx, rs.now().Add(lease)))
	p.patience, p.linger = 0, 0
	if err := p.run(ctx); err != nil {
		return 0, err
	}
	res.Outcomes = append(res.Outcomes, p.rec.outcomes...)
	if l := rs.reportLimits(ctx, maps.Keys(p.seen)); len(l) == 1 {
		res.Limit = &l[0]
	}
	return p.attempted, nil
}

// claimLanePage claims at most n of the lane's due deliveries and gives
// them the webhook as it is now; none when it is gone or inactive (the
// claims come back when their lease ends, and the next round ends them).
func (rs *Rounds) claimLanePage(ctx context.Context, in RoundInput, n int, lease time.Duration) (deliveries.ClaimedPage, error) {
	claimed, err := rs.store.ClaimDue(ctx, deliveries.Claim{
		SubscriptionID: in.SubscriptionID, Limit: n, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID,
		Lease: lease, OrderMaxWait: rs.orderMaxWait,
	})
	if err != nil || len(claimed) == 0 {
		return deliveries.ClaimedPage{}, err
	}
	target, err := rs.store.ReadTarget(ctx, in.SubscriptionID, rs.now)
	if err != nil && !errors.Is(err, deliveries.ErrSubscriptionGone) {
		return deliveries.ClaimedPage{}, err
	}
	if err != nil || target.Deleted || !target.Active {
		return deliveries.ClaimedPage{}, nil
	}
	for i := range claimed {
		claimed[i].Webhook = target
	}
	return deliveries.ClaimedPage{Claimed: claimed}, nil
}
