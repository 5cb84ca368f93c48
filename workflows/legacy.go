package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/deliveries"
)

// LegacyEvent is the event workflow of earlier releases, registered as
// deliveries.LegacyEventWorkflowName: a local activity matched subscriptions
// and started one delivery workflow per match. Nothing starts it any more;
// it stays so event workflows already in flight when a worker is upgraded
// complete (and replay). Remove it once no such workflow can be running.
func LegacyEvent(ctx workflow.Context, in deliveries.EventInput) (deliveries.StartDeliveriesResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, stepOptions)
	var res deliveries.StartDeliveriesResult
	err := workflow.ExecuteLocalActivity(ctx, deliveries.LegacyStartDeliveries, in).Get(ctx, &res)
	return res, err
}
