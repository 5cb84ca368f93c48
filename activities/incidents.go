package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
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

// incidentFollowUp announces webhooks' incidents, ends them and tells
// their accounts (notices). One per worker, shared by the rounds (an own
// lane follows its webhook's incident) and the record of outcomes (a
// deactivation is told at once).
type incidentFollowUp struct {
	store   *incidents.Store
	policy  IncidentPolicy
	notices NoticeStarter // nil: notices are recorded, not sent
	logger  *slog.Logger
	now     func() time.Time
}

// incidentStep announces a webhook's incident once it is old enough, or
// ends it once its breaker stayed closed for the quiet period (telling
// the account it recovered when it had been announced). It says how long
// until it must look again (false: no incident).
func (f *incidentFollowUp) incidentStep(ctx context.Context, state deliveries.BreakerState) (time.Duration, bool) {
	if state.IncidentStartedAt == nil {
		return 0, false
	}
	now := f.now()
	p := f.policy
	if state.Open {
		if state.IncidentAnnouncedAt == nil && !now.Before(state.IncidentStartedAt.Add(p.NoticeAfter)) {
			f.announce(ctx, state.SubscriptionID, webhooks.NoticeBreakerOpened)
			return 0, false // the probes keep the lane going
		}
		return f.incidentWait(ctx, state)
	}
	if state.ClosedAt == nil || now.Before(state.ClosedAt.Add(p.Quiet)) {
		if state.ClosedAt == nil {
			return p.Quiet, true
		}
		return state.ClosedAt.Add(p.Quiet).Sub(now), true
	}
	ended, err := f.store.EndIncident(ctx, state.SubscriptionID, p.Quiet)
	switch {
	case errors.Is(err, incidents.ErrNoIncidentEnded):
		return 0, false
	case err != nil:
		f.logger.WarnContext(ctx, "cannot end a webhook's incident; trying again", "subscription_id", state.SubscriptionID, "error", err.Error())
		return time.Second, true
	}
	if ended.Announced {
		f.notify(ctx, ended.Incident, webhooks.NoticeRecovered)
	}
	return 0, false
}

// followDue takes each incident due a step (at most limit, oldest first)
// one step further: incidentStep with the webhook's breaker as it is now.
func (f *incidentFollowUp) followDue(ctx context.Context, breakers *deliveries.Store, limit int) (int, error) {
	ids, err := f.store.IncidentsDue(ctx, f.policy.NoticeAfter, f.policy.Quiet, limit)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		state, err := breakers.BreakerTimes(ctx, id)
		if errors.Is(err, deliveries.ErrSubscriptionGone) {
			continue
		}
		if err != nil {
			return 0, err
		}
		f.incidentStep(ctx, state)
	}
	return len(ids), nil
}

// incidentWait is how long until an open breaker's incident is due to be
// announced (false: nothing to announce), or to be looked at again.
func (f *incidentFollowUp) incidentWait(_ context.Context, state deliveries.BreakerState) (time.Duration, bool) {
	if state.IncidentStartedAt == nil || state.IncidentAnnouncedAt != nil || !state.Open {
		return 0, false
	}
	return state.IncidentStartedAt.Add(f.policy.NoticeAfter).Sub(f.now()), true
}

// tellDisabled tells the account that its webhook was deactivated
// automatically, and ends the incident.
func (f *incidentFollowUp) tellDisabled(ctx context.Context, subscriptionID string) {
	f.announce(ctx, subscriptionID, webhooks.NoticeDisabled)
	if _, err := f.store.EndIncident(ctx, subscriptionID, f.policy.Quiet); err != nil && !errors.Is(err, incidents.ErrNoIncidentEnded) {
		f.logger.WarnContext(ctx, "cannot end a deactivated webhook's incident", "subscription_id", subscriptionID, "error", err.Error())
	}
}

// announce marks a webhook's incident announced (once) and sends the
// notice of kind.
func (f *incidentFollowUp) announce(ctx context.Context, subscriptionID, kind string) {
	inc, err := f.store.AnnounceIncident(ctx, subscriptionID)
	switch {
	case errors.Is(err, incidents.ErrNoIncidentEnded):
		if kind != webhooks.NoticeDisabled {
			return // announced already
		}
		// A deactivation is told even when the incident was announced as
		// an open breaker: it is another state change.
		if inc, err = f.store.Incident(ctx, subscriptionID); err != nil {
			return
		}
	case err != nil:
		f.logger.WarnContext(ctx, "cannot announce a webhook's incident; its lane will try again", "subscription_id", subscriptionID, "error", err.Error())
		return
	}
	f.notify(ctx, inc, kind)
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// notify stores the notice of kind for an incident (once per webhook, kind
// and incident) and starts its sending; an account past its hourly bound
// gets no more notices that hour.
func (f *incidentFollowUp) notify(ctx context.Context, inc incidents.Incident, kind string) {
	log := f.logger.With("account_id", inc.AccountID, "subscription_id", inc.SubscriptionID, "kind", kind)
	if limit := f.policy.MaxPerHour; limit > 0 {
		n, err := f.store.RecentNotices(ctx, inc.AccountID, f.now().Add(-time.Hour))
		if err != nil {
			log.WarnContext(ctx, "cannot count an account's notices; not telling it", "error", err.Error())
			return
		}
		if n >= int64(limit) {
			log.WarnContext(ctx, "an account got its notices for the hour; this one is dropped", "max_per_hour", limit)
			return
		}
	}
	now := f.now()
	id := webhooks.NewID(webhooks.NoticeIDPrefix)
	body, err := json.Marshal(webhooks.NoticeBody{Type: kind, NoticeID: id, AccountID: strconv.FormatInt(inc.AccountID, 10),
		Webhook:           webhooks.NoticeWebhook{ID: inc.SubscriptionID, Name: inc.WebhookName, ClientURL: inc.ClientURL},
		IncidentStartedAt: micros(inc.StartedAt), CreatedAt: micros(now)})
	if err != nil {
		log.ErrorContext(ctx, "cannot build a notice", "error", err.Error())
		return
	}
	created, err := f.store.CreateNotice(ctx, incidents.Notice{ID: id, AccountID: inc.AccountID,
		SubscriptionID: inc.SubscriptionID, Kind: kind, IncidentStartedAt: inc.StartedAt, Payload: body})
	if err != nil {
		log.WarnContext(ctx, "cannot store a notice", "error", err.Error())
		return
	}
	if !created {
		return // this incident's notice of this kind exists already
	}
	log.InfoContext(ctx, "account notice", "notice_id", id)
	if f.notices == nil {
		return
	}
	if err := f.notices.StartNotice(ctx, id, inc.AccountID); err != nil {
		log.WarnContext(ctx, "cannot start sending a notice", "notice_id", id, "error", err.Error())
	}
}
