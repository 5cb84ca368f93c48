package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Outcomes of one delivery attempt, the "outcome" label of the attempt
// metrics: "success", or the error kind the delivery activity reports
// (these, plus invalid_url, secret and cancelled).
const (
	AttemptSucceeded    = "success"     // 2xx within the timeout
	AttemptHTTPError    = "http_status" // the receiver answered, not 2xx
	AttemptTimeout      = "timeout"     // no complete answer within DELIVERY_TIMEOUT
	AttemptNetworkError = "connection"  // refused, reset, DNS, TLS
	AttemptBlocked      = "not_allowed" // destination refused by the network policy
)

// Final outcomes of a delivery, the "outcome" label of webhooks_deliveries_total.
const (
	DeliveryDelivered = "delivered" // an attempt succeeded
	DeliveryFailed    = "failed"    // retries exhausted or permanent error
)

// DeliveryMetrics are the instruments the delivery engine records into. A nil
// *DeliveryMetrics records nothing, so code and tests that do not care about
// metrics can pass nil.
type DeliveryMetrics struct {
	attempts        metric.Int64Counter
	attemptDuration metric.Float64Histogram
	retries         metric.Int64Counter
	deliveries      metric.Int64Counter
	lag             metric.Float64Histogram
	lateAnswers     metric.Int64Counter
	autoDisabled    metric.Int64Counter
	breakers        metric.Int64Counter
	inFlightLimits  metric.Int64Histogram
}

// NewDeliveryMetrics creates the instruments on mp.
func NewDeliveryMetrics(mp metric.MeterProvider) (*DeliveryMetrics, error) {
	meter := mp.Meter("github.com/jobhooks/jobhooks/deliveries")
	var (
		m   DeliveryMetrics
		err error
	)
	if m.attempts, err = meter.Int64Counter("webhooks.delivery.attempts",
		metric.WithDescription("Delivery attempts (HTTP requests to receivers) by event type and outcome."),
		metric.WithUnit("{attempt}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.attemptDuration, err = meter.Float64Histogram("webhooks.delivery.attempt.duration",
		metric.WithDescription("Time from sending a delivery request to the receiver's answer (or the timeout)."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15)); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.retries, err = meter.Int64Counter("webhooks.delivery.retries",
		metric.WithDescription("Delivery attempts after the first one for the same delivery."),
		metric.WithUnit("{attempt}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.deliveries, err = meter.Int64Counter("webhooks.deliveries",
		metric.WithDescription("Finished deliveries by event type and final outcome (delivered or failed)."),
		metric.WithUnit("{delivery}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.lag, err = meter.Float64Histogram("webhooks.delivery.lag",
		metric.WithDescription("Time from the event's ingestion to its successful delivery, retries included."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4*3600, 12*3600)); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.lateAnswers, err = meter.Int64Counter("webhooks.delivery.late_answers",
		metric.WithDescription("Answers that came after an attempt's deadline (the attempt failed as a timeout), by event type and status class."),
		metric.WithUnit("{answer}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.autoDisabled, err = meter.Int64Counter("webhooks.auto_disabled",
		metric.WithDescription("Webhooks deactivated automatically because their deliveries kept failing."),
		metric.WithUnit("{webhook}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.breakers, err = meter.Int64Counter("webhooks.breaker.transitions",
		metric.WithDescription("Endpoint breakers that opened (state=open) or closed (state=closed)."),
		metric.WithUnit("{transition}")); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	if m.inFlightLimits, err = meter.Int64Histogram("webhooks.delivery.in_flight_limit",
		metric.WithDescription("In-flight limits of webhooks whose limit moved from the initial one, as each round reports them."),
		metric.WithUnit("{attempt}"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)); err != nil {
		return nil, fmt.Errorf("delivery metrics: %w", err)
	}
	return &m, nil
}

// InFlightLimit records a webhook's in-flight limit as a round reports it.
func (m *DeliveryMetrics) InFlightLimit(ctx context.Context, limit int) {
	if m == nil {
		return
	}
	m.inFlightLimits.Record(ctx, int64(limit))
}

// BreakerTransition records a webhook's breaker opening or closing.
func (m *DeliveryMetrics) BreakerTransition(ctx context.Context, open bool) {
	if m == nil {
		return
	}
	state := "closed"
	if open {
		state = "open"
	}
	m.breakers.Add(ctx, 1, metric.WithAttributes(attribute.String("state", state)))
}

// WebhookDisabled records a webhook deactivated automatically.
func (m *DeliveryMetrics) WebhookDisabled(ctx context.Context) {
	if m == nil {
		return
	}
	m.autoDisabled.Add(ctx, 1)
}

// LateAnswer records an answer that came after an attempt's deadline.
func (m *DeliveryMetrics) LateAnswer(ctx context.Context, eventType string, statusCode int) {
	if m == nil {
		return
	}
	m.lateAnswers.Add(ctx, 1, metric.WithAttributes(attribute.String("event_type", eventType),
		attribute.String("status_class", fmt.Sprintf("%dxx", statusCode/100))))
}

// Attempt describes one finished delivery attempt.
type Attempt struct {
	EventType string
	Outcome   string // one of the Attempt* constants
	// Number is 1 for the first attempt of a delivery.
	Number   int
	Duration time.Duration
}

// AttemptFinished records one delivery attempt, at the one place where its
// outcome is known.
func (m *DeliveryMetrics) AttemptFinished(ctx context.Context, a Attempt) {
	if m == nil {
		return
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(
		attribute.String("event_type", a.EventType),
		attribute.String("outcome", a.Outcome),
	))
	m.attempts.Add(ctx, 1, attrs)
	m.attemptDuration.Record(ctx, a.Duration.Seconds(), attrs)
	if a.Number > 1 {
		m.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("event_type", a.EventType)))
	}
}

// DeliveryFinished records a delivery's final outcome; sinceEvent is the time
// from the event's ingestion to now and feeds the lag histogram when the
// delivery succeeded and the caller knows it (zero: unknown, not recorded).
func (m *DeliveryMetrics) DeliveryFinished(ctx context.Context, eventType, outcome string, sinceEvent time.Duration) {
	if m == nil {
		return
	}
	et := attribute.String("event_type", eventType)
	m.deliveries.Add(ctx, 1, metric.WithAttributes(et, attribute.String("outcome", outcome)))
	if outcome == DeliveryDelivered && sinceEvent > 0 {
		m.lag.Record(ctx, sinceEvent.Seconds(), metric.WithAttributes(et))
	}
}
