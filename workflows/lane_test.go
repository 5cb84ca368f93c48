package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

var lane = workflows.LaneInput{SubscriptionID: "wsu_test", AccountID: 7}

// newLaneEnv is a test environment with the lane registered and its round
// activity mocked by rounds, served in order (the last one repeats); it
// records every round's input.
func newLaneEnv(t *testing.T, rounds ...activities.RoundResult) (*testsuite.TestWorkflowEnvironment, *[]activities.RoundInput) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Lane, workflow.RegisterOptions{Name: workflows.LaneWorkflowName})
	var a *activities.Rounds
	var routes *activities.Routes
	env.RegisterActivity(a)
	env.RegisterActivity(routes)
	var inputs []activities.RoundInput
	env.OnActivity(routes.ReturnIdleToShard, mock.Anything, lane.SubscriptionID).Return(activities.ReturnResult{Returned: true}, nil)
	env.OnActivity(a.DeliverDue, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RoundInput) (activities.RoundResult, error) {
			inputs = append(inputs, in)
			r := rounds[min(len(inputs), len(rounds))-1]
			return r, nil
		})
	return env, &inputs
}

func outcome(status string, d time.Duration) activities.Outcome {
	return activities.Outcome{DeliveryID: "wdl_x", Attempt: 1, Status: status, Duration: d}
}

func TestLane_EndsWhenIdleAfterDeliveringEverything(t *testing.T) {
	env, inputs := newLaneEnv(t, activities.RoundResult{
		Outcomes: []activities.Outcome{outcome(deliveries.StatusSucceeded, time.Millisecond)},
	})
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if len(*inputs) != 1 {
		t.Fatalf("%d rounds, want 1 (nothing pending, no wake)", len(*inputs))
	}
	in := (*inputs)[0]
	if in.SubscriptionID != lane.SubscriptionID || in.AccountID != lane.AccountID || in.Slow {
		t.Errorf("round input = %+v", in)
	}
}

func TestLane_WakeSignalStartsAnotherRound(t *testing.T) {
	env, inputs := newLaneEnv(t, activities.RoundResult{})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.WakeSignal, nil) }, 30*time.Second)
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if len(*inputs) != 2 {
		t.Fatalf("%d rounds, want 2 (one at start, one for the wake)", len(*inputs))
	}
}

func TestLane_WaitsForTheNextRetryOnATimer(t *testing.T) {
	env, inputs := newLaneEnv(t,
		activities.RoundResult{Outcomes: []activities.Outcome{outcome(deliveries.StatusRetrying, time.Millisecond)}, Pending: true, NextDueIn: 2 * time.Minute},
		activities.RoundResult{Outcomes: []activities.Outcome{outcome(deliveries.StatusSucceeded, time.Millisecond)}},
	)
	var roundTimes []time.Time
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		roundTimes = append(roundTimes, env.Now())
		if len(roundTimes) == 1 && d != 2*time.Minute {
			t.Errorf("first timer %s, want the retry's 2m", d)
		}
	})
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if len(*inputs) != 2 {
		t.Fatalf("%d rounds, want 2 (the retry after its timer)", len(*inputs))
	}
}

// TestLane_DueWorkRunsRoundsBackToBack: work due at once runs the next
// round after the least timer, which ends the workflow task between the
// two (a round is a local activity: rounds run on inside one task made the
// task heartbeat, and on a busy box fail).
func TestLane_DueWorkRunsRoundsBackToBack(t *testing.T) {
	env, inputs := newLaneEnv(t,
		activities.RoundResult{Pending: true, NextDueIn: 0},
		activities.RoundResult{Pending: true, NextDueIn: -time.Second},
		activities.RoundResult{},
	)
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if len(*inputs) != 3 || len(timers) != 3 || timers[0] != time.Millisecond || timers[1] != time.Millisecond {
		t.Fatalf("%d rounds and timers %v, want 3 rounds, a 1ms timer after each of the first two, then the idle timer", len(*inputs), timers)
	}
}

func TestLane_SlowReceiverGetsRoundsOfItsCap(t *testing.T) {
	env, inputs := newLaneEnv(t,
		activities.RoundResult{Outcomes: []activities.Outcome{outcome(deliveries.StatusRetrying, 3*time.Second)}, Pending: true},
		activities.RoundResult{Outcomes: []activities.Outcome{outcome(deliveries.StatusSucceeded, time.Millisecond)}, Pending: true},
		activities.RoundResult{},
	)
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	var slow []bool
	for _, in := range *inputs {
		slow = append(slow, in.Slow)
	}
	want := []bool{false, true, false}
	if len(slow) != len(want) || slow[0] != want[0] || slow[1] != want[1] || slow[2] != want[2] {
		t.Fatalf("rounds' Slow flags %v, want %v (rounds of the cap after a slow attempt)", slow, want)
	}
}

func TestLane_StopsWhenTheWebhookIsGone(t *testing.T) {
	env, inputs := newLaneEnv(t, activities.RoundResult{Stopped: "the webhook was deleted", Pending: true})
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil || len(*inputs) != 1 {
		t.Fatalf("completed %v, error %v, rounds %d", env.IsWorkflowCompleted(), env.GetWorkflowError(), len(*inputs))
	}
}

func TestLane_ContinuesAsNewAfterManyRounds(t *testing.T) {
	env, inputs := newLaneEnv(t, activities.RoundResult{Pending: true})
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != workflows.LaneWorkflowName || len(*inputs) != 200 {
		t.Fatalf("continued as %s after %d rounds", can.WorkflowType.Name, len(*inputs))
	}
}

// TestLane_RoundThatCannotRunIsRetried: a round that fails (database
// down) runs again; the lane does not end or lose the work.
func TestLane_RoundThatCannotRunIsRetried(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Lane, workflow.RegisterOptions{Name: workflows.LaneWorkflowName})
	var a *activities.Rounds
	var routes *activities.Routes
	env.RegisterActivity(a)
	env.RegisterActivity(routes)
	env.OnActivity(routes.ReturnIdleToShard, mock.Anything, mock.Anything).Return(activities.ReturnResult{Returned: true}, nil)
	calls := 0
	env.OnActivity(a.DeliverDue, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RoundInput) (activities.RoundResult, error) {
			calls++
			if calls < 3 {
				return activities.RoundResult{}, errors.New("database unreachable")
			}
			return activities.RoundResult{}, nil
		})
	env.ExecuteWorkflow(workflows.LaneWorkflowName, lane)
	if env.GetWorkflowError() != nil || calls != 3 {
		t.Fatalf("error %v after %d calls, want success on the 3rd", env.GetWorkflowError(), calls)
	}
}
