package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
)

// TestDeliveryInput is a test delivery. Its attempt's timeout is the
// worker's (DELIVERY_TIMEOUT).
type TestDeliveryInput struct {
	Test webhooks.TestDelivery
}

// TestDeliveryResult is what the API learns of a test delivery's attempt.
// It is the workflow's own result type, so the dispatch service that waits
// for it does not import the activities; its fields keep the names of
// activities.Outcome's, so a result recorded as an Outcome decodes into it.
type TestDeliveryResult struct {
	DeliveryID string
	Status     string // the delivery's status after the attempt
	StatusCode int    `json:",omitempty"` // 0: no HTTP response
	Error      string `json:",omitempty"`
}

// testAttemptBound bounds a test delivery's local activity: the attempt
// itself is bounded by the worker's DELIVERY_TIMEOUT (at most 1m).
const testAttemptBound = time.Minute + 15*time.Second

// SendTestDelivery makes a test delivery's single attempt (spec 4.5) and
// returns its outcome to the API, which waits for it. It does not queue
// behind the webhook's other deliveries: a test answers now.
func SendTestDelivery(ctx workflow.Context, in TestDeliveryInput) (TestDeliveryResult, error) {
	info := workflow.GetInfo(ctx)
	in.Test.WorkflowID, in.Test.WorkflowRunID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    testAttemptBound,
		ScheduleToCloseTimeout: 2*testAttemptBound + 30*time.Second,
		// Retried only when the attempt could not run or be recorded.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	var a *activities.TestDeliveries
	var out activities.Outcome
	if err := workflow.ExecuteLocalActivity(ctx, a.AttemptTest, in.Test).Get(ctx, &out); err != nil {
		return TestDeliveryResult{}, err
	}
	return TestDeliveryResult{DeliveryID: out.DeliveryID, Status: out.Status, StatusCode: out.StatusCode, Error: out.Error}, nil
}
