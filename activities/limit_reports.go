package activities

import (
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// reportLimits reports the limits of a round's webhooks whose limit is
// not the initial one: for its marker, the metrics and the health object
// (kept in the database; a write that fails is only logged).
func (rs *Rounds) reportLimits(ctx context.Context, webhookIDs iter.Seq[string]) []WebhookLimit {
	limits := rs.limitsOf(webhookIDs)
	if len(limits) == 0 {
		return nil
	}
	if rs.observeLimits != nil {
		rs.observeLimits(ctx, limits)
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

// limitsOf is the limits of webhooks whose limit is not the initial one:
// those a person would want to see.
func (rs *Rounds) limitsOf(webhookIDs iter.Seq[string]) []WebhookLimit {
	var out []WebhookLimit
	for id := range webhookIDs {
		s, ok := rs.inFlight.Snapshot(id)
		if !ok || s.Limit == rs.inFlight.Initial() {
			continue
		}
		out = append(out, WebhookLimit{WebhookID: id, Limit: s.Limit, InFlight: s.InFlight, UnloadedLatency: s.MinLatency})
	}
	slices.SortFunc(out, func(x, y WebhookLimit) int { return strings.Compare(x.WebhookID, y.WebhookID) })
	return out
}

// claimAhead is how far ahead a claim takes what a webhook's answers will
// free: well within the fence's 200 ms, so what waits for a place starts
// with the state its claim read.
const claimAhead = 50 * time.Millisecond

// aheadOf is how many more of a webhook's deliveries its answers free
// within claimAhead: its limit once per recent latency, at most 8 times.
func (rs *Rounds) aheadOf(webhookID string) int {
	s, ok := rs.inFlight.Snapshot(webhookID)
	if !ok || s.Latency <= 0 {
		return 0
	}
	return s.Limit * min(int(claimAhead/s.Latency), 8)
}
