package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/acme/webhooks/deliveries"
)

// Event fans an ingested event out: a local activity matches subscriptions
// and starts one delivery workflow per match (deterministic ids, so a rerun
// starts nothing twice). Starting them from the activity rather than as
// child workflows keeps this workflow at one workflow task.
func Event(ctx workflow.Context, in deliveries.EventInput) (deliveries.StartDeliveriesResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Minute,
		ScheduleToCloseTimeout: 7 * 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Minute,
		},
	})
	var res deliveries.StartDeliveriesResult
	err := workflow.ExecuteLocalActivity(ctx, deliveries.StartDeliveriesName, in).Get(ctx, &res)
	return res, err
}

// PurgeOldDeliveries is started by the retention Schedule: it deletes
// delivery records older than retentionDays in bounded batches.
func PurgeOldDeliveries(ctx workflow.Context, retentionDays int) (int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var deleted int64
	err := workflow.ExecuteActivity(ctx, deliveries.PurgeDeliveriesName, retentionDays).Get(ctx, &deleted)
	return deleted, err
}
