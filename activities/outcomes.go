package activities

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/untrusted"
)

// Outcome is what one attempt gave: a value, whatever the receiver said.
type Outcome struct {
	DeliveryID string
	Attempt    int32
	Status     string // the delivery's status after the attempt
	StatusCode int    `json:",omitempty"` // 0: no HTTP response
	Error      string `json:",omitempty"`
	// RetryIn is the wait before the next attempt (the larger of the
	// backoff and the receiver's Retry-After); zero once final.
	RetryIn time.Duration `json:",omitempty"`
	// Duration is how long the attempt took.
	Duration time.Duration
	// Probe: the attempt was an open breaker's probe (it did not count
	// against the delivery's retries).
	Probe bool `json:",omitempty"`
}

// outcomeErrorMax bounds an outcome's Error as a round's marker holds it
// (the attempt's record keeps the whole message, shown in Recent
// Deliveries): a connection error names its client_url, up to 2,048
// characters, and a round of them would otherwise outgrow what Temporal
// takes in one history event (TestOutcome_ARoundsMarkerIsBounded).
const outcomeErrorMax = 100

// outcomeErrorHead is how much of the start of a long message an outcome
// keeps; the rest of outcomeErrorMax goes to its end, where an error's
// cause is ("... connect: connection refused").
const outcomeErrorHead = 30

// outcomeError is an attempt's error message as an outcome holds it:
// whole when short, else its start and its end joined by "…".
func outcomeError(msg string) string {
	return untrusted.Ends(msg, outcomeErrorMax, outcomeErrorHead, "…")
}

// outcomeWriter records attempts' outcomes and follows what each record
// changed (deactivations, breakers that opened or closed). One per worker,
// shared by its rounds: the shared rounds' and own lanes' pipelines, the attempts
// they hand over and the breaker's probes.
type outcomeWriter struct {
	store                  *deliveries.Store
	logger                 *slog.Logger
	now                    func() time.Time
	autoDisable            deliveries.AutoDisable
	breaker                deliveries.Breaker
	observeWebhookDisabled func(ctx context.Context, accountID int64, subscriptionID string)
	observeBreaker         func(ctx context.Context, accountID int64, subscriptionID string, open bool)
	incidents              *incidentFollowUp
	wake                   wakeups
	observer               *attemptObserver
	// kept holds outcomes whose write was given up (keep).
	kept *keptOutcomes
}

// write records attempts' outcomes in one write, reports the
// webhooks it deactivated, follows late answers, feeds the observers and
// returns the outcomes as a round reports them. A write that fails (the
// database is unreachable for a while) is tried again until shortly before
// until, when the claims' leases end: outcomes the receivers already gave
// are not thrown away, which would send those deliveries again.
func (w *outcomeWriter) write(ctx context.Context, claimed []deliveries.Claimed, records []deliveries.AttemptRecord, lates []pendingLate, until time.Time) ([]Outcome, error) {
	changes, err := w.recordUntil(ctx, records, until)
	if err != nil {
		return nil, err
	}
	changes = append(changes, w.disabledByReceivers(ctx, records)...)
	w.applyWebhookChanges(ctx, changes)
	outcomes := make([]Outcome, 0, len(records))
	for i, r := range records {
		if i < len(lates) && lates[i].answer != nil {
			go w.observer.recordLateAnswer(lates[i], r.SubscriptionID, claimed[i].EventType, r)
		}
		outcomes = append(outcomes, outcomeOf(r))
		w.observer.observe(ctx, claimed[i], r)
	}
	return outcomes, nil
}

// recordDeadline is how long a round keeps trying to record the outcomes
// its receivers gave: until shortly before the round itself must end, and
// at least until its claims' leases end. Past the leases no other round can
// take those deliveries meanwhile: the round that would (the next of the
// same shard or lane) waits for this one. Only a round that dies (its
// worker stopped) leaves them to be sent again, with the same id and bytes.
func recordDeadline(ctx context.Context, leasedUntil time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Add(-2*time.Second).After(leasedUntil) {
		return d.Add(-2 * time.Second)
	}
	return leasedUntil
}

// recordUntil writes records, trying again with backoff while the
// database is away, until a second before until (or ctx ends). What the
// database refuses is not retried: recordIsolated finds it.
func (w *outcomeWriter) recordUntil(ctx context.Context, records []deliveries.AttemptRecord, until time.Time) ([]deliveries.WebhookChange, error) {
	wait := 100 * time.Millisecond
	for {
		changes, err := w.recordIsolated(ctx, records)
		if err == nil {
			return changes, nil
		}
		if !w.now().Add(wait).Before(until.Add(-time.Second)) {
			return nil, err
		}
		w.logger.WarnContext(ctx, "cannot record attempts; trying again", "attempts", len(records), "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// recordIsolated writes records in one statement. When the database
// refuses it for something other than an outage (deliveries.Refused: a
// value of one record, a delivery deleted meanwhile), it writes each half
// on its own, down to the records refused alone, so one record never
// fails the others beside it (other webhooks', other accounts'). A record
// refused alone is written once more without what its receiver sent
// (withoutAnswer), then given up with a log line. Only an outage is
// returned: the caller tries the rest again.
func (w *outcomeWriter) recordIsolated(ctx context.Context, records []deliveries.AttemptRecord) ([]deliveries.WebhookChange, error) {
	policy := deliveries.RecordPolicy{AutoDisable: w.autoDisable, Breaker: w.breaker}
	changes, err := w.store.RecordAttempts(ctx, records, policy)
	if err == nil || !deliveries.Refused(err) {
		return changes, err
	}
	if len(records) > 1 {
		mid := len(records) / 2
		left, err := w.recordIsolated(ctx, records[:mid])
		if err != nil {
			return nil, err // an outage: the caller writes all again (idempotent)
		}
		right, err := w.recordIsolated(ctx, records[mid:])
		return append(left, right...), err
	}
	r := records[0]
	w.logger.ErrorContext(ctx, "the database refused an attempt's record; writing it without the receiver's answer",
		"delivery_id", r.DeliveryID, "attempt", r.AttemptNumber, "error", err.Error())
	changes, err = w.store.RecordAttempts(ctx, []deliveries.AttemptRecord{withoutAnswer(r, err)}, policy)
	if err != nil && deliveries.Refused(err) {
		w.logger.ErrorContext(ctx, "the database refused an attempt's record; it is not recorded",
			"delivery_id", r.DeliveryID, "attempt", r.AttemptNumber, "error", err.Error())
		return nil, nil
	}
	return changes, err
}

// withoutAnswer is a record the database refused, with nothing the
// receiver sent: its outcome (status, code, retry) as it was, its message
// saying why the rest is missing.
func withoutAnswer(r deliveries.AttemptRecord, refusal error) deliveries.AttemptRecord {
	r.ResponseSnippet = ""
	r.ErrorMessage = "the record of this attempt was refused by the database (" + deliveries.RefusalCode(refusal) +
		"); what the receiver answered is not kept"
	return r
}

// outcomeOf is an attempt's outcome as a round reports it.
func outcomeOf(r deliveries.AttemptRecord) Outcome {
	o := Outcome{DeliveryID: r.DeliveryID, Attempt: r.AttemptNumber, Status: r.Status,
		StatusCode: r.StatusCode, Error: outcomeError(r.ErrorMessage), Duration: r.Duration}
	if !deliveries.IsFinal(r.Status) {
		o.RetryIn = r.RetryIn
	}
	return o
}

// disabledByReceivers deactivates the webhooks whose receivers answered
// with Webhook-Delivery: disable, and returns them as changes to follow
// like an automatic deactivation (pending deliveries end skipped, the
// account is told).
func (w *outcomeWriter) disabledByReceivers(ctx context.Context, records []deliveries.AttemptRecord) []deliveries.WebhookChange {
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
		c, changed, err := w.store.DisableByReceiver(ctx, r, reason)
		if err != nil {
			w.logger.WarnContext(ctx, "cannot deactivate a webhook its receiver asked to stop", "subscription_id", r.SubscriptionID, "error", err.Error())
			continue
		}
		if !changed {
			w.logger.InfoContext(ctx, "a receiver asked to stop deliveries of a webhook that is inactive or no longer sends to it",
				"subscription_id", r.SubscriptionID)
			continue
		}
		w.logger.WarnContext(ctx, "webhook deactivated at its receiver's request", "subscription_id", r.SubscriptionID)
		changes = append(changes, c)
	}
	return changes
}

// applyWebhookChanges follows what a record changed: a webhook deactivated
// has its pending deliveries end skipped and its account told; a breaker
// that opened and holds the webhook's deliveries during an outage holds
// them and wakes its own lane, which probes (one on on_outage "retry"
// stays where it is, its deliveries on their schedule: the sweeper follows
// its incident); one that closed gives held deliveries back, due now, to
// the lane it moved to. Whether deliveries are held, and the route, are
// the record statement's decisions (RecordAttempts: Held, ToOwnLane),
// never taken here.
func (w *outcomeWriter) applyWebhookChanges(ctx context.Context, changes []deliveries.WebhookChange) {
	var held []string
	var owned []deliveries.RoutedWebhook
	for _, c := range changes {
		switch {
		case c.Disabled:
			if !c.ByReceiver {
				w.logger.WarnContext(ctx, "webhook deactivated automatically: its deliveries keep failing",
					"account_id", c.AccountID, "subscription_id", c.SubscriptionID,
					"failing_for", w.autoDisable.After.String(), "min_failures", w.autoDisable.MinFailures)
			}
			if w.observeWebhookDisabled != nil {
				w.observeWebhookDisabled(ctx, c.AccountID, c.SubscriptionID)
			}
			// Its pending deliveries end skipped, with their bodies, at once.
			if _, err := w.store.EndPending(ctx, c.SubscriptionID, deliveries.StatusSkipped, "the webhook was inactive"); err != nil {
				w.logger.WarnContext(ctx, "cannot end the deliveries of a deactivated webhook; its next round will",
					"subscription_id", c.SubscriptionID, "error", err.Error())
			}
			w.incidents.tellDisabled(ctx, c.SubscriptionID)
		case c.BreakerOpened && c.Held:
			w.logger.WarnContext(ctx, "webhook breaker opened: its deliveries wait for a probe to succeed",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID, "threshold", w.breaker.Threshold)
		case c.BreakerOpened:
			w.logger.WarnContext(ctx, "webhook breaker opened: its deliveries keep their retry schedule",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID, "threshold", w.breaker.Threshold)
		case c.BreakerClosed:
			w.logger.InfoContext(ctx, "webhook breaker closed: an attempt was answered",
				"account_id", c.AccountID, "subscription_id", c.SubscriptionID)
			if _, err := w.store.ReleaseHeld(ctx, c.SubscriptionID); err != nil {
				// Its lane's next round releases them.
				w.logger.WarnContext(ctx, "cannot release a webhook's held deliveries", "subscription_id", c.SubscriptionID, "error", err.Error())
			}
		}
		if !c.Disabled && c.Held {
			// Opened on "hold", or its on_outage became "hold" while open.
			held = append(held, c.SubscriptionID)
		}
		if !c.Disabled && (c.Held || c.ToOwnLane) {
			// Its lane probes, drains what was held after the close, or
			// gives held deliveries back to their schedule (on_outage
			// became "retry" while they were held).
			owned = append(owned, deliveries.RoutedWebhook{SubscriptionID: c.SubscriptionID, AccountID: c.AccountID, Route: deliveries.RouteOwn})
		}
		if (c.BreakerOpened || c.BreakerClosed) && w.observeBreaker != nil {
			w.observeBreaker(ctx, c.AccountID, c.SubscriptionID, c.BreakerOpened)
		}
	}
	if err := w.store.HoldDeliveries(ctx, held); err != nil {
		// The shard moves them when it next reads them; the lane holds them.
		w.logger.WarnContext(ctx, "cannot hold the deliveries of webhooks whose breaker opened", "error", err.Error())
	}
	w.wake.wakeOwnLanes(ctx, owned)
}
