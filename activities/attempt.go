package activities

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// attemptClaimed makes the attempt of one claimed delivery and returns its
// record: the body is fixed at the first attempt, from the stored event, in
// the webhook's format (bodyOf).
// With a gate, a record of status "" means the attempt did not start.
func (rs *Rounds) attemptClaimed(ctx context.Context, c deliveries.Claimed, sign signer, gate *attemptGate) (deliveries.AttemptRecord, pendingLate) {
	target := c.Webhook
	rec := deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: target.ID, AttemptNumber: c.Attempt,
		ClientURL: target.ClientURL, SecretVersion: target.SecretVersion, LeasedUntil: c.LeasedUntil}
	if c.Attempt > c.MaxAttempts {
		// Its last attempt was made, but its outcome was lost (a crash
		// between the POST and the record): nothing is left to try. The
		// record is this claim's own (its number): a record under an
		// earlier number changes a delivery only if it succeeded, and the
		// delivery stayed retrying, claimed again at every lease.
		rec.Status = deliveries.StatusFailed
		rec.ErrorMessage = "the outcome of the last attempt was lost"
		return rec, pendingLate{}
	}
	b := rs.send.bodyOf(ctx, c, rs.store.RunLinks())
	if b.kind != "" {
		// Like a secret that cannot be opened: an attempt that failed
		// before it was sent (KindInvalidPayload is final).
		rec.StartedAt, rec.ErrorKind, rec.ErrorMessage = rs.send.now(), b.kind, b.message
		rec.Status, rec.RetryIn = rs.schedule.Next(c.Attempt, c.MaxAttempts, b.kind, 0, 0)
		return rec, pendingLate{}
	}
	rec.Body = b.fixed
	body := b.sent
	ctx, span := rs.observer.attemptSpan(ctx, c)
	defer span.End()
	post := rs.send.post(ctx, target.AccountID, target.ClientURL, body, func(h http.Header) error {
		if err := sign(h, c.ID, body); err != nil {
			return err
		}
		h.Set(webhooks.HeaderDeliveryID, c.ID)
		h.Set(webhooks.HeaderEventID, c.EventID)
		h.Set(webhooks.HeaderAttempt, strconv.Itoa(int(c.Attempt)))
		c.SetSequenceHeader(h)
		return nil
	}, gate, &attemptFence{fences: rs.fences, target: target})
	if post.NotStarted {
		return deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: target.ID}, pendingLate{}
	}
	rec.StartedAt, rec.Duration, rec.StatusCode = post.StartedAt, post.Duration, post.StatusCode
	rec.ErrorKind, rec.ErrorMessage, rec.ResponseSnippet = post.Kind, post.Message, post.Snippet
	rec.Status, rec.RetryIn = rs.schedule.Next(c.Attempt, c.MaxAttempts, post.Kind, post.StatusCode, post.RetryAfter)
	if post.Directive != "" {
		rec.Directive = post.Directive
		if rec.Status != deliveries.StatusSucceeded {
			// The receiver asked to stop: no retry, and the record says why.
			rec.Status, rec.ErrorKind = deliveries.StatusFailed, deliveries.KindAborted
			rec.ErrorMessage = fmt.Sprintf("%s; the receiver asked to stop (%s: %s)", rec.ErrorMessage, webhooks.HeaderDirective, post.Directive)
		}
	}
	return rec, pendingLate{answer: post.Late, span: span.SpanContext()}
}
