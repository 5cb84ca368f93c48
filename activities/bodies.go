package activities

import (
	"context"
	"errors"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/formats"
)

// attemptBody is what an attempt sends: the body as stored and shown
// (built at the first attempt in the webhook's format), and the bytes
// sent and signed (a PagerDuty body gets the webhook's routing key).
type attemptBody struct {
	stored, sent []byte
	// built: stored was built by this attempt, which records it.
	built bool
	// kind and message, when kind is set, say why there is nothing to
	// send: the attempt fails with them.
	kind, message string
}

// bodyOf returns what c's attempt sends. The webhook's delivery settings
// (its format and routing key) are read only when they matter: at the
// first attempt, and for a PagerDuty body.
func (sn *sender) bodyOf(ctx context.Context, c deliveries.Claimed, links formats.RunLinks) attemptBody {
	b := attemptBody{stored: c.Payload}
	if b.stored != nil && !formats.IsPagerDuty(b.stored) {
		b.sent = b.stored
		return b
	}
	s, err := sn.settings.deliverySettings(context.WithoutCancel(ctx), c.Webhook.ID)
	if err != nil {
		b.kind, b.message = deliveries.KindSecret, err.Error()
		return b
	}
	if b.stored == nil {
		target := c.Webhook
		b.stored, err = deliveries.BuildBody(deliveries.EventBody{AccountID: target.AccountID, SubscriptionID: target.ID,
			WebhookName: target.Name, EventID: c.EventID, EventType: c.EventType, EventData: c.EventData,
			ToolName: c.EventToolName, AcceptedAt: c.EventAcceptedAt, Format: s.Format, Links: links})
		if err != nil {
			b.kind, b.message = deliveries.KindInvalidPayload, bodyError(err, s.Format)
			return b
		}
		b.built = true
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
	b := attemptBody{stored: stored, built: true}
	if b.sent, err = formats.WithRoutingKey(stored, s.PagerDutyRoutingKey); err != nil {
		b.kind, b.message = deliveries.KindInvalidPayload, err.Error()
	}
	return eventType, b
}
