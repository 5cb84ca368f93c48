package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// DefaultPurgeBatchSize bounds each retention DELETE so no lock is held
// for long.
const DefaultPurgeBatchSize = 1000

// PurgeDeliveryRecords deletes delivery records (and their attempts) older
// than retentionDays, one bounded batch at a time, heartbeating between
// batches. It returns how many records it deleted.
func (a *Activities) PurgeDeliveryRecords(ctx context.Context, retentionDays int) (int64, error) {
	cutoff := a.deps.Now().Add(-time.Duration(retentionDays) * 24 * time.Hour)
	var total int64
	for {
		n, err := a.deps.Store.PurgeBatch(ctx, cutoff, int32(a.deps.PurgeBatchSize))
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
