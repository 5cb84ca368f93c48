package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// BacklogFunc counts the deliveries not final, and those of them due now.
type BacklogFunc func(ctx context.Context) (due, pending int64, err error)

// RegisterBacklog exports the delivery backlog as two gauges read at each
// collection: webhooks.deliveries.due (due now: waiting for a lane round)
// and webhooks.deliveries.pending (not final, retries included). A count
// that fails is skipped, not reported as zero.
func RegisterBacklog(mp metric.MeterProvider, count BacklogFunc) error {
	meter := mp.Meter("github.com/jobhooks/jobhooks/deliveries")
	due, err := meter.Int64ObservableGauge("webhooks.deliveries.due",
		metric.WithDescription("Deliveries due now and not yet attempted (the backlog)."), metric.WithUnit("{delivery}"))
	if err != nil {
		return fmt.Errorf("backlog metrics: %w", err)
	}
	pending, err := meter.Int64ObservableGauge("webhooks.deliveries.pending",
		metric.WithDescription("Deliveries not final: due now or waiting for a retry."), metric.WithUnit("{delivery}"))
	if err != nil {
		return fmt.Errorf("backlog metrics: %w", err)
	}
	_, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		d, p, err := count(ctx)
		if err != nil {
			return nil
		}
		o.ObserveInt64(due, d)
		o.ObserveInt64(pending, p)
		return nil
	}, due, pending)
	if err != nil {
		return fmt.Errorf("backlog metrics: %w", err)
	}
	return nil
}

// OpenBreakersFunc counts the webhooks whose endpoint breaker is open.
type OpenBreakersFunc func(ctx context.Context) (int64, error)

// RegisterOpenBreakers reports webhooks.breakers.open, read from the
// database at each collection.
func RegisterOpenBreakers(mp metric.MeterProvider, count OpenBreakersFunc) error {
	meter := mp.Meter("github.com/jobhooks/jobhooks/deliveries")
	open, err := meter.Int64ObservableGauge("webhooks.breakers.open",
		metric.WithDescription("Webhooks whose endpoint breaker is open: their deliveries wait for a probe to succeed."),
		metric.WithUnit("{webhook}"))
	if err != nil {
		return fmt.Errorf("breaker metrics: %w", err)
	}
	_, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, err := count(ctx)
		if err != nil {
			return nil
		}
		o.ObserveInt64(open, n)
		return nil
	}, open)
	if err != nil {
		return fmt.Errorf("breaker metrics: %w", err)
	}
	return nil
}
