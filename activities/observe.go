package activities

import (
	"context"
	"log/slog"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// LateAnswerOutcome is an answer that came after an attempt's deadline.
type LateAnswerOutcome struct {
	DeliveryID     string
	SubscriptionID string
	EventType      string
	Attempt        int32
	StatusCode     int
	After          time.Duration
}

// AttemptOutcome describes one finished attempt, for observers (metrics).
type AttemptOutcome struct {
	DeliveryID     string
	SubscriptionID string
	AccountID      int64
	EventType      string
	Attempt        int32
	StatusCode     int
	ErrorKind      string // "" on success
	Duration       time.Duration
	DeliveryStatus string // after this attempt
	// SinceEvent is the time from the event's acceptance by the API to the
	// end of this attempt; zero when unknown (tests, redeliveries).
	SinceEvent time.Duration
}

// attemptObserver follows finished attempts: their spans, late answers
// and the observers (metrics). One per worker, shared by the rounds and
// test deliveries.
type attemptObserver struct {
	store             *deliveries.Store
	tracer            trace.Tracer
	logger            *slog.Logger
	now               func() time.Time
	observeAttempt    func(ctx context.Context, o AttemptOutcome)
	observeLateAnswer func(ctx context.Context, o LateAnswerOutcome)
}

// pendingLate is an attempt that may still get a late answer.
type pendingLate struct {
	answer <-chan LateAnswer
	span   trace.SpanContext // the attempt's
}

// recordLateAnswer waits for an attempt's late answer, if one comes, and
// notes it on the attempt's record (already written), in a span of the
// attempt's trace and for the metrics. It holds no attempt slot.
func (ob *attemptObserver) recordLateAnswer(l pendingLate, subscriptionID, eventType string, rec deliveries.AttemptRecord) {
	ans, ok := <-l.answer
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), l.span), 30*time.Second)
	defer cancel()
	_, span := ob.tracer.Start(ctx, "AttemptLateAnswer", trace.WithAttributes(
		attribute.String("webhook.delivery_id", rec.DeliveryID), attribute.Int("webhook.attempt", int(rec.AttemptNumber)),
		attribute.Int("http.response.status_code", ans.StatusCode), attribute.Int64("webhook.late_after_ms", ans.After.Milliseconds())))
	defer span.End()
	for try := 0; try < 5; try++ { // a test delivery's record may still be on its way
		recorded, err := ob.store.RecordLateAnswer(ctx, rec.DeliveryID, rec.AttemptNumber, ans.StatusCode, ans.After)
		if err != nil {
			ob.logger.WarnContext(ctx, "cannot record a late answer", "delivery_id", rec.DeliveryID, "error", err.Error())
			return
		}
		if recorded {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	ob.logger.InfoContext(ctx, "late answer", "delivery_id", rec.DeliveryID, "attempt", rec.AttemptNumber,
		"status_code", ans.StatusCode, "after_ms", ans.After.Milliseconds())
	if ob.observeLateAnswer != nil {
		ob.observeLateAnswer(ctx, LateAnswerOutcome{DeliveryID: rec.DeliveryID, SubscriptionID: subscriptionID,
			EventType: eventType, Attempt: rec.AttemptNumber, StatusCode: ans.StatusCode, After: ans.After})
	}
}

// attemptSpan starts the span of an attempt in its event's trace (the
// ingestion request's), linked to the round (a shard's or a lane's) that
// made it, so one trace runs from ingestion to the outbound request.
func (ob *attemptObserver) attemptSpan(ctx context.Context, c deliveries.Claimed) (context.Context, trace.Span) {
	round := trace.LinkFromContext(ctx)
	parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": c.EventTraceParent})
	if !trace.SpanContextFromContext(parent).IsValid() {
		return ob.tracer.Start(ctx, "AttemptDelivery")
	}
	_, span := ob.tracer.Start(parent, "AttemptDelivery", trace.WithLinks(round),
		trace.WithAttributes(attribute.String("webhook.delivery_id", c.ID), attribute.Int("webhook.attempt", int(c.Attempt))))
	return trace.ContextWithSpan(ctx, span), span
}

// observe tells the metrics of a finished attempt; one that never went
// out is none of theirs.
func (ob *attemptObserver) observe(ctx context.Context, c deliveries.Claimed, r deliveries.AttemptRecord) {
	target := c.Webhook
	if ob.observeAttempt == nil || r.StartedAt.IsZero() {
		return
	}
	var since time.Duration
	if !r.Body.IsZero() { // the first attempt of an ingested event's delivery
		since = ob.now().Sub(c.EventAcceptedAt)
	}
	ob.observeAttempt(ctx, AttemptOutcome{
		DeliveryID: c.ID, SubscriptionID: target.ID, AccountID: target.AccountID, EventType: c.EventType,
		Attempt: r.AttemptNumber, StatusCode: r.StatusCode, ErrorKind: r.ErrorKind, Duration: r.Duration,
		DeliveryStatus: r.Status, SinceEvent: since,
	})
}
