package activities

import (
	"context"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// breakerStep is what a round of a held webhook's lane does: announce the
// incident when it is time, and send the probe when it is due. It returns
// the probe's outcome (if one went) and when the lane should look again.
func (rs *Rounds) breakerStep(ctx context.Context, in RoundInput, target deliveries.WebhookTarget, res *RoundResult) error {
	if err := rs.store.HoldDeliveries(ctx, []string{in.SubscriptionID}); err != nil {
		return err
	}
	state, err := rs.store.Breaker(ctx, in.SubscriptionID)
	if err != nil {
		return err
	}
	now := rs.now()
	if !state.Open {
		return nil // closed meanwhile: the next round drains
	}
	if state.NextProbeAt == nil || !now.Before(*state.NextProbeAt) {
		if err := rs.sendProbe(ctx, in, target, res); err != nil {
			return err
		}
		if state, err = rs.store.Breaker(ctx, in.SubscriptionID); err != nil {
			return err
		}
		if !state.Open {
			res.Pending, res.NextDueIn = true, 0
			return nil
		}
	}
	res.Breaker = &BreakerReport{OpenedAt: timeOrZero(state.OpenedAt), NextProbeAt: timeOrZero(state.NextProbeAt),
		FailedProbes: state.FailedProbes, Backlog: state.Backlog}
	res.Pending = true
	// Nothing to probe (no delivery pending): look again after the
	// longest step; a delivery that arrives meanwhile waits for it.
	res.NextDueIn = max(rs.breaker.ProbeMax, time.Second)
	if state.NextProbeAt != nil && state.NextProbeAt.After(rs.now()) {
		res.NextDueIn = state.NextProbeAt.Sub(rs.now())
	}
	return nil
}

// sendProbe attempts a held webhook's oldest pending delivery (a probe
// does not count against its retries) and records it: an answer closes
// the breaker, a failure sets the next backoff step.
func (rs *Rounds) sendProbe(ctx context.Context, in RoundInput, target deliveries.WebhookTarget, res *RoundResult) error {
	lease := rs.attemptTimeout + leaseSlack
	leasedUntil := rs.now().Add(lease)
	claimed, err := rs.store.ClaimProbe(ctx, deliveries.Claim{SubscriptionID: in.SubscriptionID, Lease: lease,
		WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID})
	if err != nil || len(claimed) == 0 {
		return err
	}
	claimed[0].Webhook = target
	rec, late := rs.attemptClaimed(ctx, claimed[0], rs.send.signer(ctx, target), nil)
	if rec.Status == "" { // its webhook changed since it was read: the next round sees it
		_, err := rs.store.ReleaseClaims(ctx, []deliveries.Lease{claimed[0].Lease()})
		return err
	}
	rec.Probe = true
	outcomes, err := rs.outcomes.write(ctx, claimed, []deliveries.AttemptRecord{rec}, []pendingLate{late}, recordDeadline(ctx, leasedUntil))
	if err != nil {
		return err
	}
	for i := range outcomes {
		outcomes[i].Probe = true
	}
	res.Outcomes = append(res.Outcomes, outcomes...)
	return nil
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
