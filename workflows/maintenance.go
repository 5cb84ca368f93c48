package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// PurgeOldDeliveries is started by the retention Schedule: it deletes
// delivery records and events older than retention in bounded batches.
func PurgeOldDeliveries(ctx workflow.Context, retention time.Duration) (int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var a *activities.Maintenance
	var deleted int64
	err := workflow.ExecuteActivity(ctx, a.PurgeDeliveryRecords, retention).Get(ctx, &deleted)
	return deleted, err
}

// WakeOverdueWebhooks is started by the sweeper Schedule: it wakes the
// shard or own lane of each webhook whose deliveries are overdue, so a
// lost wake-up delays a delivery by at most the sweep interval plus the
// grace, and never loses it; then it follows the incidents due a step
// (announce, end), so an incident's notice is at most a sweep interval
// late. It returns how many webhooks it woke.
func WakeOverdueWebhooks(ctx workflow.Context) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var a *activities.Maintenance
	var woken int
	if err := workflow.ExecuteActivity(ctx, a.WakeOverdueWebhooks).Get(ctx, &woken); err != nil {
		return 0, err
	}
	var followed int
	return woken, workflow.ExecuteActivity(ctx, a.FollowIncidents).Get(ctx, &followed)
}
