package activities

import (
	"context"
	"iter"

	"github.com/jobhooks/jobhooks/deliveries"
)

// reportLimits reports the limits of a round's webhooks whose limit is
// not the initial one: for its marker, the metrics and the health object
// (kept in the database; a write that fails is only logged).
func (rs *Rounds) reportLimits(ctx context.Context, webhookIDs iter.Seq[string]) []WebhookLimit {
	limits := rs.limits.changed(webhookIDs)
	if len(limits) == 0 {
		return nil
	}
	if rs.observeLimits != nil {
		rs.observeLimits(ctx, limits)
	}
	if rs.store == nil { // rounds without a database (the pipeline's tests) keep them nowhere
		return limits
	}
	rows := make([]deliveries.InFlightLimit, len(limits))
	for i, l := range limits {
		rows[i] = deliveries.InFlightLimit{WebhookID: l.WebhookID, Limit: l.Limit, InFlight: l.InFlight, UnloadedLatency: l.UnloadedLatency}
	}
	if err := rs.store.SaveInFlightLimits(ctx, rows); err != nil {
		rs.logger.WarnContext(ctx, "cannot keep in-flight limits for the health object", "error", err.Error())
	}
	return limits
}
