package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// ReplayInput is a replay and its pace: BatchSize deliveries every
// Interval (the rate bound per webhook).
type ReplayInput struct {
	ReplayID  string
	BatchSize int
	Interval  time.Duration
}

// batchesPerRun bounds a replay run's history; it then continues as new.
const batchesPerRun = 500

// Replay sends a replay's deliveries a batch at a time, with a durable
// timer between batches, until they are all sent or the replay is
// cancelled. The cursor is in PostgreSQL, so a replay survives restarts of
// API, worker and Temporal.
func Replay(ctx workflow.Context, in ReplayInput) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: roundRetention,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.Replays
	for batch := 1; ; batch++ {
		var res activities.ReplayBatchResult
		if err := workflow.ExecuteLocalActivity(ctx, a.ReplayBatch, activities.ReplayBatchInput{
			ReplayID: in.ReplayID, BatchSize: in.BatchSize,
		}).Get(ctx, &res); err != nil {
			return err
		}
		if res.Done {
			return nil
		}
		if batch >= batchesPerRun {
			return workflow.NewContinueAsNewError(ctx, ReplayWorkflowName, in)
		}
		if err := workflow.Sleep(ctx, in.Interval); err != nil {
			return err
		}
	}
}
