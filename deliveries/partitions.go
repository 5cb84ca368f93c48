package deliveries

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// Delivery records and their attempts live in time partitions (migration
// 00034), by the second each delivery id carries. Every API and worker
// process makes them ahead of time (KeepPartitions), and retention drops a
// whole partition once it is past the retention period and holds only
// final deliveries (Purge).

// Bounds of a partition's width.
const (
	minPartitionWidth = time.Minute
	maxPartitionWidth = 7 * 24 * time.Hour
)

// PartitionWidth is how much time one partition of delivery records spans
// for a retention period: a quarter of it, between a minute and a week. A
// record is kept at least the retention period, and at most a width more
// (and until its partition holds nothing pending): 30 days' retention keeps
// records 30 to 37 days in five or six partitions.
func PartitionWidth(retention time.Duration) time.Duration {
	return min(max(retention/4, minPartitionWidth), maxPartitionWidth).Truncate(time.Second)
}

// PartitionsAhead is how far past now the partitions must reach: two
// widths, so a process that keeps them (every PartitionWidth/4 at most a
// minute) or a retention run that was missed leaves ingestion a width's
// margin.
func PartitionsAhead(retention time.Duration) time.Duration {
	return 2 * PartitionWidth(retention)
}

// EnsurePartitions makes the partitions that delivery ids made from now
// until PartitionsAhead(retention) need, and returns how many it made.
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time, retention time.Duration) (int, error) {
	made, err := s.q.EnsureDeliveryPartitions(ctx, dbq.EnsureDeliveryPartitionsParams{
		WidthSeconds: int64(PartitionWidth(retention) / time.Second), Until: now.Add(PartitionsAhead(retention)),
	})
	if err != nil {
		return 0, fmt.Errorf("make delivery partitions: %w", err)
	}
	return int(made), nil
}

// KeepPartitions keeps the partitions made ahead until ctx ends: at once,
// then every quarter width (at most a minute). A failure is logged and
// tried again at the next tick; the margin of PartitionsAhead absorbs it.
func (s *Store) KeepPartitions(ctx context.Context, retention time.Duration, logger *slog.Logger) {
	every := min(PartitionWidth(retention)/4, time.Minute)
	for {
		if made, err := s.EnsurePartitions(ctx, time.Now(), retention); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.WarnContext(ctx, "could not make delivery partitions ahead; trying again", "error", err)
		} else if made > 0 {
			logger.InfoContext(ctx, "made delivery partitions", "partitions", made)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
