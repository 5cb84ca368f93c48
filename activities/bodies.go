package activities

import (
	"context"
	"errors"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/formats"
)

// attemptBody is what an attempt sends: the body as stored and shown
// (fixed at the first attempt in the webhook's format), and the bytes
// sent and signed (a PagerDuty body gets the webhook's routing key).
type attemptBody struct {
	stored, sent []byte
	// fixed: the body as this attempt fixed it, which its record keeps
	// (zero when an earlier attempt fixed it).
	fixed deliveries.FixedBody
	// kind and message, when kind is set, say why there is nothing to
	// send: the attempt fails with them.
	kind, message string
}

// bodyOf returns what c's attempt sends: its fixed body, or the body
// built now (the first attempt) in the webhook's format. The webhook's
// delivery settings (its format and routing key) are read only when they
// matter: at the first attempt, and for a PagerDuty body.
func (sn *sender) bodyOf(ctx context.Context, c deliveries.Claimed, links formats.RunLinks) attemptBody {
	target := c.Webhook
	event := deliveries.EventBody{AccountID: target.AccountID, SubscriptionID: target.ID, WebhookName: target.Name,
		EventID: c.EventID, EventType: c.EventType, EventData: c.EventData, ToolName: c.EventToolName,
		AcceptedAt: c.EventAcceptedAt, Links: links}
	var b attemptBody
	if !c.Body.IsZero() {
		stored, err := c.Body.Bytes(event)
		if err != nil {
			return attemptBody{kind: deliveries.KindInvalidPayload, message: err.Error()}
		}
		b.stored = stored
		if !formats.IsPagerDuty(stored) {
			b.sent = stored
			return b
		}
	}
	s, err := sn.settings.deliverySettings(context.WithoutCancel(ctx), target.ID)
	if err != nil {
		return attemptBody{kind: deliveries.KindSecret, message: err.Error()}
	}
	if b.stored == nil {
		event.Format = s.Format
		if b.stored, err = deliveries.BuildBody(event); err != nil {
			return attemptBody{kind: deliveries.KindInvalidPayload, message: bodyError(err, s.Format)}
		}
		b.fixed = deliveries.FixBody(s.Format, target.Name, b.stored)
	}
	if b.sent, err = formats.WithRoutingKey(b.stored, s.PagerDutyRoutingKey); err != nil {
		b.kind, b.message = deliveries.KindInvalidPayload, err.Error()
	}
	return b
}

func bodyError(err error, format string) string {
	if errors.Is(err, formats.ErrNothingToSend) {
		return "the webhook's format (" + format + ") sends nothing for this event type"
	}
	return err.Error()
}

// testBodyOf returns what a test delivery sends: its sample in the
// webhook's format, and the sample's event type (deliveries.TestBody).
func (sn *sender) testBodyOf(ctx context.Context, in webhooks.TestDelivery, links formats.RunLinks) (string, attemptBody) {
	s, err := sn.settings.deliverySettings(context.WithoutCancel(ctx), in.SubscriptionID)
	if err != nil {
		return in.EventType, attemptBody{kind: deliveries.KindSecret, message: err.Error()}
	}
	eventType, stored, err := deliveries.TestBody(in.Sample, s.Format, links)
	if err != nil {
		return in.EventType, attemptBody{kind: deliveries.KindInvalidPayload, message: bodyError(err, s.Format)}
	}
	if eventType == "" {
		eventType = in.EventType
	}
	b := attemptBody{stored: stored}
	if b.sent, err = formats.WithRoutingKey(stored, s.PagerDutyRoutingKey); err != nil {
		b.kind, b.message = deliveries.KindInvalidPayload, err.Error()
	}
	return eventType, b
}
