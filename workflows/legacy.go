package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/acme/webhooks/deliveries"
)

// LegacyEvent is the event workflow of earlier releases, registered as
// deliveries.LegacyEventWorkflowName: a local activity matched subscriptions
// and started one delivery workflow per match. Nothing starts it any more;
// it stays so event workflows already in flight when a worker is upgraded
// complete (and replay). Remove it once no such workflow can be running.
func LegacyEvent(ctx workflow.Context, in deliveries.EventInput) (deliveries.StartDeliveriesResult, error) {
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
	err := workflow.ExecuteLocalActivity(ctx, deliveries.LegacyStartDeliveries, in).Get(ctx, &res)
	return res, err
}
