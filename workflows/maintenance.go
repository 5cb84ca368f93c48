package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
)

// PurgeOldDeliveries is started by the retention Schedule: it drops the
// partitions of delivery records past retention (making the next ones
// ahead) and deletes old events in bounded batches.
func PurgeOldDeliveries(ctx workflow.Context, retention time.Duration) (deliveries.PurgeResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var a *activities.Maintenance
	var purged deliveries.PurgeResult
	err := workflow.ExecuteActivity(ctx, a.PurgeDeliveryRecords, retention).Get(ctx, &purged)
	return purged, err
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
