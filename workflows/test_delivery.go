package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// TestDeliveryInput is a test delivery. Its attempt's timeout is the
// worker's (DELIVERY_TIMEOUT).
type TestDeliveryInput struct {
	Test activities.TestInput
}

// testAttemptBound bounds a test delivery's local activity: the attempt
// itself is bounded by the worker's DELIVERY_TIMEOUT (at most 1m).
const testAttemptBound = time.Minute + 15*time.Second

// SendTestDelivery makes a test delivery's single attempt (spec 4.5) and
// returns its outcome to the API, which waits for it. It does not queue
// behind the webhook's other deliveries: a test answers now.
func SendTestDelivery(ctx workflow.Context, in TestDeliveryInput) (activities.Outcome, error) {
	info := workflow.GetInfo(ctx)
	in.Test.WorkflowID, in.Test.WorkflowRunID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    testAttemptBound,
		ScheduleToCloseTimeout: 2*testAttemptBound + 30*time.Second,
		// Retried only when the attempt could not run or be recorded.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	var a *activities.Activities
	var out activities.Outcome
	err := workflow.ExecuteLocalActivity(ctx, a.AttemptTest, in.Test).Get(ctx, &out)
	return out, err
}
