package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestReplay_BatchesOnATimerUntilDone: a replay sends a batch, waits its
// interval on a durable timer, and stops when a batch says it is done.
func TestReplay_BatchesOnATimerUntilDone(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Replay, workflow.RegisterOptions{Name: workflows.ReplayWorkflowName})
	var a *activities.Replays
	env.RegisterActivity(a)
	batches := 0
	env.OnActivity(a.ReplayBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReplayBatchInput) (activities.ReplayBatchResult, error) {
			batches++
			if in.ReplayID != "wrp_1" || in.BatchSize != 10 {
				t.Errorf("batch input %+v", in)
			}
			return activities.ReplayBatchResult{Sent: 10, Done: batches == 3}, nil
		})
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	env.ExecuteWorkflow(workflows.ReplayWorkflowName, workflows.ReplayInput{ReplayID: "wrp_1", BatchSize: 10, Interval: time.Second})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if batches != 3 || len(timers) != 2 || timers[0] != time.Second {
		t.Fatalf("%d batches with timers %v, want 3 batches and a 1s timer between each", batches, timers)
	}
}
