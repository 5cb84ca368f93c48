package activities

import (
	"context"
	"errors"
	"net/http"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"go.opentelemetry.io/otel/trace"
)

// TestDeliveries are the activity of a test delivery's workflow: its one
// attempt, signed and sent as every delivery is. Register it with the
// worker; build it with New.
type TestDeliveries struct {
	store    *deliveries.Store
	send     *sender
	observer *attemptObserver
}

// AttemptTest makes a test delivery's one attempt and records it: its
// sample in the webhook's format, recorded as built (a PagerDuty routing
// key only in the bytes sent).
func (td *TestDeliveries) AttemptTest(ctx context.Context, in webhooks.TestDelivery) (Outcome, error) {
	target, err := td.store.LoadTarget(ctx, in.SubscriptionID)
	if errors.Is(err, deliveries.ErrSubscriptionGone) || (err == nil && target.Deleted) {
		return Outcome{DeliveryID: in.DeliveryID, Status: deliveries.StatusCancelled, Error: "the webhook was deleted"}, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	eventType, b := td.send.testBodyOf(ctx, in, td.store.RunLinks())
	var post postResult
	if b.kind != "" {
		post = postResult{StartedAt: td.send.now(), Kind: b.kind, Message: b.message}
		if b.stored == nil { // nothing was built: the record shows the sample
			b.stored = webhooks.BuildPayload(in.Sample)
		}
	} else {
		sign := td.send.signer(ctx, target)
		post = td.send.post(ctx, target.AccountID, target.ClientURL, b.sent, func(h http.Header) error {
			if err := sign(h, in.DeliveryID, b.sent); err != nil {
				return err
			}
			h.Set(webhooks.HeaderDeliveryID, in.DeliveryID)
			h.Set(webhooks.HeaderEventID, in.EventID)
			h.Set(webhooks.HeaderAttempt, "1")
			return nil
		}, nil, nil)
	}
	status := deliveries.StatusSucceeded
	if post.Kind != "" {
		status = deliveries.StatusFailed
	}
	rec := deliveries.AttemptRecord{
		DeliveryID: in.DeliveryID, AttemptNumber: 1, StartedAt: post.StartedAt, Duration: post.Duration,
		StatusCode: post.StatusCode, ErrorKind: post.Kind, ErrorMessage: post.Message,
		ResponseSnippet: post.Snippet, Status: status,
	}
	err = td.store.RecordTest(ctx, deliveries.TestRecord{
		DeliveryID: in.DeliveryID, AccountID: in.AccountID, SubscriptionID: in.SubscriptionID, EventID: in.EventID,
		EventType: eventType, Payload: b.stored, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID,
		Attempt: rec,
	})
	if err != nil {
		return Outcome{}, err
	}
	if post.Late != nil {
		go td.observer.recordLateAnswer(pendingLate{answer: post.Late, span: trace.SpanContextFromContext(ctx)}, in.SubscriptionID, eventType, rec)
	}
	td.observer.observe(ctx, deliveries.Claimed{Webhook: target, ID: in.DeliveryID, EventType: eventType, Attempt: 1}, rec)
	return Outcome{DeliveryID: in.DeliveryID, Attempt: 1, Status: status, StatusCode: post.StatusCode,
		Error: post.Message, Duration: post.Duration}, nil
}
