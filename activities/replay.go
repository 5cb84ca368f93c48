package activities

import (
	"context"

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

// ReplayBatch sends a replay's next batch: new deliveries of the recorded
// bodies, due now (made on the shared route: the shard's claim moves them
// to the webhook's route when it has another), and wakes the webhook's
// shard. Run again after
// a crash it sends nothing twice (delivery ids derive from the replay and
// the original).
func (a *Activities) ReplayBatch(ctx context.Context, in ReplayBatchInput) (ReplayBatchResult, error) {
	sent, status, lane, err := a.deps.Store.ReplayNextBatch(ctx, in.ReplayID, in.BatchSize)
	if err != nil {
		return ReplayBatchResult{}, err
	}
	if sent > 0 {
		if err := a.deps.Waker.WakeNow(ctx, []deliveries.RoutedWebhook{lane}); err != nil {
			// Not lost: the deliveries are stored and due; the sweeper wakes their shard.
			a.deps.Logger.WarnContext(ctx, "cannot wake the lane of a replay", "replay_id", in.ReplayID, "error", err.Error())
		}
	}
	return ReplayBatchResult{Sent: sent, Done: status != deliveries.ReplayRunning}, nil
}
