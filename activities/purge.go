package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/jobhooks/jobhooks/deliveries"
)

// DefaultPurgeBatchSize bounds each retention DELETE so no lock is held
// for long.
const DefaultPurgeBatchSize = 1000

// PurgeDeliveryRecords deletes delivery records (and their attempts) and
// events older than retentionDays, one bounded batch at a time,
// heartbeating between batches. It returns how many rows it deleted.
func (a *Activities) PurgeDeliveryRecords(ctx context.Context, retentionDays int) (int64, error) {
	cutoff := a.deps.Now().Add(-time.Duration(retentionDays) * 24 * time.Hour)
	var total int64
	for {
		n, err := a.deps.Store.Purge(ctx, cutoff, int32(a.deps.PurgeBatchSize))
		if err != nil {
			return total, err
		}
		total += n
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, total)
		}
		if n < int64(a.deps.PurgeBatchSize) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// WakeOverdueLanes wakes whoever takes the deliveries of webhooks with a
// delivery overdue (their shard, or their own lane): their wake-up was lost,
// for example the API stopped between storing an event and waking them. It
// returns how many webhooks it woke.
func (a *Activities) WakeOverdueLanes(ctx context.Context) (int, error) {
	lanes, err := a.deps.Store.OverdueWebhooks(ctx, a.deps.OverdueGrace, 1000)
	if err != nil {
		return 0, err
	}
	// Held webhooks whose probe is overdue: their lanes probe.
	probes, err := a.deps.Store.OverdueProbes(ctx, a.deps.OverdueGrace, 1000)
	if err != nil {
		return 0, err
	}
	lanes = append(lanes, probes...)
	// Deliveries left held after their breaker closed: released (due now)
	// to the webhook's route, whose lane or shard is woken.
	stranded, err := a.deps.Store.StrandedHeld(ctx, 1000)
	if err != nil {
		return 0, err
	}
	for _, l := range stranded {
		if _, err := a.deps.Store.ReleaseHeld(ctx, l.SubscriptionID); err != nil {
			return 0, err
		}
		route, err := a.deps.Store.Route(ctx, l.SubscriptionID)
		if err != nil {
			continue // deleted meanwhile
		}
		l.Route = route.Route
		if l.Route != deliveries.RoutePaused {
			lanes = append(lanes, l)
		}
	}
	if len(lanes) == 0 {
		return 0, nil
	}
	a.deps.Logger.InfoContext(ctx, "waking overdue lanes", "lanes", len(lanes))
	return len(lanes), a.deps.Waker.WakeNow(ctx, lanes)
}
