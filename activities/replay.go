package activities

import (
	"context"
	"log/slog"

	"github.com/jobhooks/jobhooks/deliveries"
)

// ReplayBatchInput asks for a replay's next batch.
type ReplayBatchInput struct {
	ReplayID  string
	BatchSize int
}

// ReplayBatchResult is what a batch sent and whether the replay is over.
type ReplayBatchResult struct {
	Sent int
	Done bool // completed or cancelled
}

// Replays are the activity of the replay workflow: a replay's batches.
// Register it with the worker; build it with New.
type Replays struct {
	store  *deliveries.Store
	waker  Waker
	logger *slog.Logger
}

// ReplayBatch sends a replay's next batch: new deliveries of the recorded
// bodies, due now (made on the shared route: the shard's claim moves them
// to the webhook's route when it has another), and wakes the webhook's
// shard. Run again after a crash it sends nothing twice (delivery ids
// derive from the replay and the original).
func (rp *Replays) ReplayBatch(ctx context.Context, in ReplayBatchInput) (ReplayBatchResult, error) {
	sent, status, routed, err := rp.store.ReplayNextBatch(ctx, in.ReplayID, in.BatchSize)
	if err != nil {
		return ReplayBatchResult{}, err
	}
	if sent > 0 {
		if err := rp.waker.WakeNow(ctx, []deliveries.RoutedWebhook{routed}); err != nil {
			// Not lost: the deliveries are stored and due; the sweeper wakes their shard.
			rp.logger.WarnContext(ctx, "cannot wake the shard of a replay's webhook", "replay_id", in.ReplayID, "error", err.Error())
		}
	}
	return ReplayBatchResult{Sent: sent, Done: status != deliveries.ReplayRunning}, nil
}
