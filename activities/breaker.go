package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
)

// IncidentPolicy says when a webhook's incident is told to its account: an
// open breaker once it has been open for NoticeAfter (an incident starts
// when a breaker opens with none going on), a deactivation at once, and
// the recovery of an announced incident once the breaker stayed closed for
// Quiet (a breaker that opens again within Quiet is the same incident). An
// account gets at most MaxPerHour notices an hour; more are dropped (the
// web UI still shows every webhook's state).
type IncidentPolicy struct {
	NoticeAfter time.Duration
	Quiet       time.Duration
	MaxPerHour  int
}

// NoticeStarter starts the workflow that sends a stored notice to its
// account's notification endpoint (at most one per notice).
type NoticeStarter interface {
	StartNotice(ctx context.Context, noticeID string, accountID int64) error
}

// applyWebhookChanges follows what a record changed: a webhook deactivated
// has its pending deliveries end skipped and its account told; a breaker
// that opened wakes the webhook's own lane, which keeps the incident's
// timers and, when the webhook holds its deliveries during an outage,
// holds them and probes (otherwise they keep their retry schedule there);
// one that closed gives held deliveries back, due now, to that lane.
// Whether deliveries are held is the record statement's decision
// (RecordAttempts: Held), never taken here.
func (a *Activities) applyWebhookChanges(ctx context.Context, changes []deliveries.WebhookChange) {
	var held []string
	var lanes []deliveries.RoutedWebhook
	for _, c := range changes {
		switch {
		case c.Disabled:
			if !c.ByReceiver {
				a.deps.Logger.WarnContext(ctx, "webhook deactivated automatically: its deliveries keep failing",
					"account_id", c.AccountID, "subscription_id", c.SubscriptionID,
					"failing_for", a.deps.AutoDisable.After.String(), "min_failures", a.deps.AutoDisable.MinFailures)
			}
			if a.deps.ObserveWebhookDisabled != nil {
				a.deps.ObserveWebhookDisabled(ctx, c.AccountID, c.SubscriptionID)
			}
			// Its pending deliveries end skipped, with their bodies, at once.
			if _, err := a.deps.Store.EndPending(ctx, c.SubscriptionID, deliveries.StatusSkipped, "the webhook was inactive"); err != nil {
				a.deps.Logger.WarnContext(ctx, "cannot end the deliveries of a deactivated webhook; its next round will",
					"subscription_id", c.SubscriptionID, "error", err.Error())
			}
			a.tellDisabled(ctx, c.SubscriptionID)
		case c.BreakerOpened && c.Held:
			a.deps.Logger.WarnContext(ctx, "webhook breaker opened: its deliveries wait for a probe to succeed",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID, "threshold", a.deps.Breaker.Threshold)
			held = append(held, c.SubscriptionID)
			lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		case c.BreakerOpened:
			a.deps.Logger.WarnContext(ctx, "webhook breaker opened: its deliveries keep their retry schedule",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID, "threshold", a.deps.Breaker.Threshold)
			lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		case c.BreakerClosed:
			a.deps.Logger.InfoContext(ctx, "webhook breaker closed: a probe was answered; the backlog drains",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID)
			if _, err := a.deps.Store.ReleaseHeld(ctx, c.SubscriptionID); err != nil {
				// Its lane's next round releases them.
				a.deps.Logger.WarnContext(ctx, "cannot release a webhook's held deliveries", "subscription_id", c.SubscriptionID, "error", err.Error())
			}
			lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		case c.Held:
			// Its on_outage became "hold" while its breaker was open.
			held = append(held, c.SubscriptionID)
			lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		case c.ToOwnLane:
			// Its on_outage became "retry" while its deliveries were held:
			// its lane gives them back to their schedule.
			lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		}
		if (c.BreakerOpened || c.BreakerClosed) && a.deps.ObserveBreaker != nil {
			a.deps.ObserveBreaker(ctx, c.AccountID, c.SubscriptionID, c.BreakerOpened)
		}
	}
	if err := a.deps.Store.HoldDeliveries(ctx, held); err != nil {
		// The shard moves them when it next reads them; the lane holds them.
		a.deps.Logger.WarnContext(ctx, "cannot hold the deliveries of webhooks whose breaker opened", "error", err.Error())
	}
	a.wakeOwnLanes(ctx, lanes)
}

// breakerStep is what a round of a held webhook's lane does: announce the
// incident when it is time, and send the probe when it is due. It returns
// the probe's outcome (if one went) and when the lane should look again.
func (a *Activities) breakerStep(ctx context.Context, in RoundInput, target deliveries.LaneTarget, res *RoundResult) error {
	if err := a.deps.Store.HoldDeliveries(ctx, []string{in.SubscriptionID}); err != nil {
		return err
	}
	state, err := a.deps.Store.Breaker(ctx, in.SubscriptionID)
	if err != nil {
		return err
	}
	now := a.deps.Now()
	if !state.Open {
		return nil // closed meanwhile: the next round drains
	}
	if state.NextProbeAt == nil || !now.Before(*state.NextProbeAt) {
		if err := a.sendProbe(ctx, in, target, res); err != nil {
			return err
		}
		if state, err = a.deps.Store.Breaker(ctx, in.SubscriptionID); err != nil {
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
	res.NextDueIn = max(a.deps.Breaker.ProbeMax, time.Second)
	if state.NextProbeAt != nil && state.NextProbeAt.After(a.deps.Now()) {
		res.NextDueIn = state.NextProbeAt.Sub(a.deps.Now())
	}
	return nil
}

// BreakerReport is a held webhook's breaker as its lane's round saw it.
type BreakerReport struct {
	OpenedAt     time.Time
	NextProbeAt  time.Time
	FailedProbes int `json:",omitempty"`
	Backlog      int64
}

// sendProbe attempts a held webhook's oldest pending delivery (a probe
// does not count against its retries) and records it: an answer closes
// the breaker, a failure sets the next backoff step.
func (a *Activities) sendProbe(ctx context.Context, in RoundInput, target deliveries.LaneTarget, res *RoundResult) error {
	lease := a.deps.AttemptTimeout + leaseSlack
	leasedUntil := a.deps.Now().Add(lease)
	claimed, err := a.deps.Store.ClaimProbe(ctx, deliveries.Claim{SubscriptionID: in.SubscriptionID, Lease: lease,
		WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID})
	if err != nil || len(claimed) == 0 {
		return err
	}
	claimed[0].Webhook = target
	rec, late := a.attemptClaimed(ctx, claimed[0], a.signer(ctx, target), nil)
	if rec.Status == "" { // its webhook changed since it was read: the next round sees it
		return a.deps.Store.ReleaseClaims(ctx, []string{claimed[0].ID})
	}
	rec.Probe = true
	outcomes, err := a.recordAndObserve(ctx, claimed, []deliveries.AttemptRecord{rec}, []pendingLate{late}, recordDeadline(ctx, leasedUntil))
	if err != nil {
		return err
	}
	for i := range outcomes {
		outcomes[i].Probe = true
	}
	res.Outcomes = append(res.Outcomes, outcomes...)
	return nil
}

// incidentStep announces a webhook's incident once it is old enough, or
// ends it once its breaker stayed closed for the quiet period (telling
// the account it recovered when it had been announced). It says how long
// until it must look again (false: no incident).
func (a *Activities) incidentStep(ctx context.Context, state deliveries.BreakerState) (time.Duration, bool) {
	if state.IncidentStartedAt == nil {
		return 0, false
	}
	now := a.deps.Now()
	p := a.deps.Incidents
	if state.Open {
		if state.IncidentAnnouncedAt == nil && !now.Before(state.IncidentStartedAt.Add(p.NoticeAfter)) {
			a.announce(ctx, state.SubscriptionID, webhooks.NoticeBreakerOpened)
			return 0, false // the probes keep the lane going
		}
		return a.incidentWait(ctx, state)
	}
	if state.ClosedAt == nil || now.Before(state.ClosedAt.Add(p.Quiet)) {
		if state.ClosedAt == nil {
			return p.Quiet, true
		}
		return state.ClosedAt.Add(p.Quiet).Sub(now), true
	}
	ended, err := a.deps.IncidentStore.EndIncident(ctx, state.SubscriptionID, p.Quiet)
	switch {
	case errors.Is(err, incidents.ErrNoIncidentEnded):
		return 0, false
	case err != nil:
		a.deps.Logger.WarnContext(ctx, "cannot end a webhook's incident; trying again", "subscription_id", state.SubscriptionID, "error", err.Error())
		return time.Second, true
	}
	if ended.Announced {
		a.notify(ctx, ended.Incident, webhooks.NoticeRecovered)
	}
	return 0, false
}

// incidentWait is how long until an open breaker's incident is due to be
// announced (false: nothing to announce), or to be looked at again.
func (a *Activities) incidentWait(_ context.Context, state deliveries.BreakerState) (time.Duration, bool) {
	if state.IncidentStartedAt == nil || state.IncidentAnnouncedAt != nil || !state.Open {
		return 0, false
	}
	return state.IncidentStartedAt.Add(a.deps.Incidents.NoticeAfter).Sub(a.deps.Now()), true
}

// tellDisabled tells the account that its webhook was deactivated
// automatically, and ends the incident.
func (a *Activities) tellDisabled(ctx context.Context, subscriptionID string) {
	a.announce(ctx, subscriptionID, webhooks.NoticeDisabled)
	if _, err := a.deps.IncidentStore.EndIncident(ctx, subscriptionID, a.deps.Incidents.Quiet); err != nil && !errors.Is(err, incidents.ErrNoIncidentEnded) {
		a.deps.Logger.WarnContext(ctx, "cannot end a deactivated webhook's incident", "subscription_id", subscriptionID, "error", err.Error())
	}
}

// announce marks a webhook's incident announced (once) and sends the
// notice of kind.
func (a *Activities) announce(ctx context.Context, subscriptionID, kind string) {
	inc, err := a.deps.IncidentStore.AnnounceIncident(ctx, subscriptionID)
	switch {
	case errors.Is(err, incidents.ErrNoIncidentEnded):
		if kind != webhooks.NoticeDisabled {
			return // announced already
		}
		// A deactivation is told even when the incident was announced as
		// an open breaker: it is another state change.
		if inc, err = a.deps.IncidentStore.Incident(ctx, subscriptionID); err != nil {
			return
		}
	case err != nil:
		a.deps.Logger.WarnContext(ctx, "cannot announce a webhook's incident; its lane will try again", "subscription_id", subscriptionID, "error", err.Error())
		return
	}
	a.notify(ctx, inc, kind)
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// disabledByReceivers deactivates the webhooks whose receivers answered
// with Webhook-Delivery: disable, and returns them as changes to follow
// like an automatic deactivation (pending deliveries end skipped, the
// account is told).
func (a *Activities) disabledByReceivers(ctx context.Context, records []deliveries.AttemptRecord) []deliveries.WebhookChange {
	var changes []deliveries.WebhookChange
	// Once per webhook and receiver: of two attempts in a page, one may
	// have gone to a client_url or secret the webhook has since left.
	type sentTo struct {
		id, url string
		version int32
	}
	seen := map[sentTo]bool{}
	for _, r := range records {
		key := sentTo{r.SubscriptionID, r.ClientURL, r.SecretVersion}
		if r.Directive != webhooks.DirectiveDisable || seen[key] {
			continue
		}
		seen[key] = true
		reason := fmt.Sprintf("The receiver asked to stop deliveries (%s: %s) at %s.", webhooks.HeaderDirective, webhooks.DirectiveDisable,
			r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))
		c, changed, err := a.deps.Store.DisableByReceiver(ctx, r, reason)
		if err != nil {
			a.deps.Logger.WarnContext(ctx, "cannot deactivate a webhook its receiver asked to stop", "subscription_id", r.SubscriptionID, "error", err.Error())
			continue
		}
		if !changed {
			a.deps.Logger.InfoContext(ctx, "a receiver asked to stop deliveries of a webhook that is inactive or no longer sends to it",
				"subscription_id", r.SubscriptionID)
			continue
		}
		a.deps.Logger.WarnContext(ctx, "webhook deactivated at its receiver's request", "subscription_id", r.SubscriptionID)
		changes = append(changes, c)
	}
	return changes
}
