package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

var shard = workflows.ShardInput{Shard: 1, Shards: 4}

// newShardEnv is a test environment with the shard registered and its
// round mocked by rounds, served in order (the last one repeats); it
// records every round's input.
func newShardEnv(t *testing.T, rounds ...activities.ShardRoundResult) (*testsuite.TestWorkflowEnvironment, *[]activities.ShardRoundInput) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Shard, workflow.RegisterOptions{Name: workflows.ShardWorkflowName})
	var a *activities.Rounds
	env.RegisterActivity(a)
	var inputs []activities.ShardRoundInput
	env.OnActivity(a.DeliverShardRound, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ShardRoundInput) (activities.ShardRoundResult, error) {
			inputs = append(inputs, in)
			return rounds[min(len(inputs), len(rounds))-1], nil
		})
	return env, &inputs
}

// TestShard_WaitsForAWakeAndNeverEndsWhileIdle: an idle shard waits
// without a timer until a wake signal, then runs a round; it stays open.
func TestShard_WaitsForAWakeAndNeverEndsWhileIdle(t *testing.T) {
	env, inputs := newShardEnv(t, activities.ShardRoundResult{})
	timers := 0
	env.SetOnTimerScheduledListener(func(string, time.Duration) { timers++ })
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.WakeSignal, nil) }, time.Hour)
	env.RegisterDelayedCallback(func() {
		if len(*inputs) != 2 {
			t.Errorf("%d rounds after the wake, want 2", len(*inputs))
		}
		env.CancelWorkflow()
	}, 2*time.Hour)
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if timers != 0 {
		t.Errorf("an idle shard scheduled %d timers, want none", timers)
	}
	in := (*inputs)[0]
	if in.Shard != shard.Shard || in.Shards != shard.Shards || in.WorkflowID == "" {
		t.Errorf("round input %+v", in)
	}
}

// TestShard_DueWorkEndsTheWorkflowTaskBetweenRounds: a shard with
// deliveries due at once after each round (steady traffic) runs its next
// round after the least timer, so each round has a workflow task of its
// own instead of one task heartbeating for as long as the traffic lasts.
func TestShard_DueWorkEndsTheWorkflowTaskBetweenRounds(t *testing.T) {
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Pending: true, NextDueIn: 0},
		activities.ShardRoundResult{Pending: true, NextDueIn: -time.Second},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if len(*inputs) != 3 || len(timers) != 2 || timers[0] != time.Millisecond || timers[1] != time.Millisecond {
		t.Fatalf("%d rounds and timers %v, want 3 rounds with a 1ms timer between each two", len(*inputs), timers)
	}
}

// TestShard_ARoundAfterDueWorkIsSteady: a round that follows one which
// ended with deliveries due at once is steady (it promises to claim for
// its window, and the API stops waking the shard); one that follows a
// round with nothing due at once, or a wake-up, is not.
func TestShard_ARoundAfterDueWorkIsSteady(t *testing.T) {
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Pending: true, NextDueIn: 0},
		activities.ShardRoundResult{Pending: true, NextDueIn: -time.Second},
		activities.ShardRoundResult{Pending: true, NextDueIn: 30 * time.Second},
		activities.ShardRoundResult{},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.WakeSignal, nil) }, time.Hour)
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	var steady []bool
	for _, in := range *inputs {
		steady = append(steady, in.Steady)
	}
	if want := []bool{false, true, true, false, false}; !slices.Equal(steady, want) {
		t.Fatalf("rounds' Steady %v, want %v", steady, want)
	}
}

// TestShard_RetryDueOnATimer: pending deliveries due later wake the shard
// on a durable timer.
func TestShard_RetryDueOnATimer(t *testing.T) {
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Pending: true, NextDueIn: 30 * time.Second},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if len(*inputs) != 2 || len(timers) != 1 || timers[0] != 30*time.Second {
		t.Fatalf("%d rounds, timers %v; want 2 rounds and the retry's 30s timer", len(*inputs), timers)
	}
}

// TestShard_CarriesHandedOverAttemptsToTheNextRound: attempts a round
// handed over are passed to the next round to report, which runs when the
// first is due to be recorded, even with nothing else to do.
func TestShard_CarriesHandedOverAttemptsToTheNextRound(t *testing.T) {
	handed := []activities.HandedOver{{DeliveryID: "wdl_a", Attempt: 1, WebhookID: "wsu_slow"}}
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Handed: handed, Isolated: []string{"wsu_slow"}, Report: handed, ReportIn: 12 * time.Second},
		activities.ShardRoundResult{Reported: []activities.Outcome{{DeliveryID: "wdl_a", Attempt: 1, Status: deliveries.StatusRetrying}}},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.WakeSignal, nil) }, time.Hour)
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if len(*inputs) < 2 || len((*inputs)[1].Report) != 1 || (*inputs)[1].Report[0].DeliveryID != "wdl_a" {
		t.Fatalf("second round input %+v, want the handed-over attempt to report", (*inputs)[1])
	}
	if len(timers) == 0 || timers[0] != 12*time.Second {
		t.Fatalf("timers %v, want the report's 12s first", timers)
	}
	if len((*inputs)[2].Report) != 0 {
		t.Errorf("third round still reports %v", (*inputs)[2].Report)
	}
}

// TestShard_ContinuesAsNewWithWhatItStillHasToReport.
func TestShard_ContinuesAsNewWithWhatItStillHasToReport(t *testing.T) {
	handed := []activities.HandedOver{{DeliveryID: "wdl_b", Attempt: 2, WebhookID: "wsu_slow"}}
	env, inputs := newShardEnv(t, activities.ShardRoundResult{Pending: true, Report: handed, ReportIn: time.Second})
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != workflows.ShardWorkflowName || len(*inputs) != 500 {
		t.Fatalf("continued as %s after %d rounds", can.WorkflowType.Name, len(*inputs))
	}
}

// TestShard_FailedRoundWaitsAndTriesAgain: a round that cannot run (its
// database is down) does not end the shard.
func TestShard_FailedRoundWaitsAndTriesAgain(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Shard, workflow.RegisterOptions{Name: workflows.ShardWorkflowName})
	var a *activities.Rounds
	env.RegisterActivity(a)
	calls := 0
	env.OnActivity(a.DeliverShardRound, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.ShardRoundInput) (activities.ShardRoundResult, error) {
			calls++
			if calls == 1 {
				return activities.ShardRoundResult{}, errors.New("database unreachable")
			}
			return activities.ShardRoundResult{Stopped: "test over"}, nil
		})
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if env.GetWorkflowError() != nil || calls < 2 {
		t.Fatalf("error %v after %d calls, want the shard to try again", env.GetWorkflowError(), calls)
	}
}

// TestShard_OperatorUpdates: Updates on a shard are validated (the ids
// well formed) before they are accepted, and accepted ones run the
// operator's action and give its result. A shard takes any webhook's
// (which shard owns it follows its destination, which only the database
// knows; the action wakes that one).
func TestShard_OperatorUpdates(t *testing.T) {
	const webhook = "wsu_test1"
	tests := []struct {
		name    string
		update  string
		arg     any
		refused string // "" accepted
		wantRes any
	}{
		{"retry", workflows.RetryDeliveryUpdate, workflows.RetryDeliveryRequest{WebhookID: webhook, DeliveryID: "wdl_0123456789abcdef0123456789"}, "",
			workflows.RetryDeliveryResult{DeliveryID: "wdl_new", RetryOf: "wdl_0123456789abcdef0123456789"}},
		{"retry a malformed delivery id", workflows.RetryDeliveryUpdate, workflows.RetryDeliveryRequest{WebhookID: webhook, DeliveryID: "42"}, "not a delivery id", nil},
		{"pause", workflows.PauseWebhookUpdate, workflows.WebhookRequest{WebhookID: webhook, Reason: "receiver migration"}, "",
			workflows.WebhookRouteResult{WebhookID: webhook, Route: deliveries.RoutePaused, Changed: true}},
		{"pause a malformed webhook id", workflows.PauseWebhookUpdate, workflows.WebhookRequest{WebhookID: "x; drop"}, "not a webhook id", nil},
		{"pause with a long reason", workflows.PauseWebhookUpdate, workflows.WebhookRequest{WebhookID: webhook, Reason: strings.Repeat("x", 501)}, "longer than 500", nil},
		{"resume", workflows.ResumeWebhookUpdate, workflows.WebhookRequest{WebhookID: webhook}, "",
			workflows.WebhookRouteResult{WebhookID: webhook, Route: deliveries.RouteShared, Changed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := newShardEnv(t, activities.ShardRoundResult{})
			var a *activities.Routes
			var actions []activities.OperatorAction
			env.OnActivity(a.ApplyOperatorAction, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.OperatorAction) (activities.OperatorResult, error) {
					actions = append(actions, in)
					switch in.Kind {
					case activities.ActionRetry:
						return activities.OperatorResult{DeliveryID: "wdl_new"}, nil
					case activities.ActionPause:
						return activities.OperatorResult{Route: deliveries.RoutePaused, Changed: true}, nil
					default:
						return activities.OperatorResult{Route: deliveries.RouteShared, Changed: true}, nil
					}
				})
			var rejected, completed error
			var got any
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(tt.update, "op-1", &testsuite.TestUpdateCallback{
					OnReject: func(err error) { rejected = err },
					OnAccept: func() {},
					OnComplete: func(res any, err error) {
						got, completed = res, err
					},
				}, tt.arg)
			}, time.Second)
			env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
			env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
			if tt.refused != "" {
				if rejected == nil || !strings.Contains(rejected.Error(), tt.refused) {
					t.Fatalf("rejection %v, want one saying %q", rejected, tt.refused)
				}
				if len(actions) != 0 {
					t.Fatalf("a refused Update ran %v", actions)
				}
				return
			}
			if rejected != nil || completed != nil {
				t.Fatalf("rejected %v, failed %v", rejected, completed)
			}
			if len(actions) != 1 || actions[0].WebhookID != webhook {
				t.Fatalf("actions %+v", actions)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantRes) {
				t.Errorf("result %+v, want %+v", got, tt.wantRes)
			}
		})
	}
}

// TestShard_RoundsGoWhereTheLastRoundSaid: a shard's first round is a
// local activity; a round that says the workers run rounds on any worker
// (DELIVERY_SHARD_ROUNDS=any-worker) makes the next one an activity any
// worker takes, and one that says otherwise brings them back; the choice
// is carried across continue-as-new.
func TestShard_RoundsGoWhereTheLastRoundSaid(t *testing.T) {
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Pending: true, OnAnyWorker: true},
		activities.ShardRoundResult{Pending: true, OnAnyWorker: true},
		activities.ShardRoundResult{Pending: true},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	var kinds []string
	env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { kinds = append(kinds, "local") })
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { kinds = append(kinds, "any") })
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"local", "any", "any", "local"}; len(*inputs) != 4 || !slices.Equal(kinds, want) {
		t.Errorf("%d rounds ran as %v, want %v", len(*inputs), kinds, want)
	}

	env, _ = newShardEnv(t, activities.ShardRoundResult{Stopped: "test over"})
	kinds = nil
	env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { kinds = append(kinds, "local") })
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { kinds = append(kinds, "any") })
	carried := shard
	carried.OnAnyWorker = true
	env.ExecuteWorkflow(workflows.ShardWorkflowName, carried)
	if !slices.Equal(kinds, []string{"any"}) {
		t.Errorf("the first round of a run continued from one on any worker ran as %v", kinds)
	}
}

// TestShard_CarriesLearnedLimitsToItsNextRounds: each round starts from
// the in-flight limits the shard's earlier rounds reported (the latest of
// each webhook and destination, without what is only shown), forgets
// those not reported for ten minutes, and a run continued as new carries
// them to its first round.
func TestShard_CarriesLearnedLimitsToItsNextRounds(t *testing.T) {
	const host = "1 https://h:443"
	env, inputs := newShardEnv(t,
		activities.ShardRoundResult{Pending: true, NextDueIn: 6 * time.Minute,
			Limits:       []activities.WebhookLimit{{WebhookID: "wsu_a", Limit: 5, InFlight: 3, UnloadedLatency: time.Second}},
			Destinations: []activities.DestinationLimit{{Destination: host, Limit: 6}}},
		activities.ShardRoundResult{Pending: true, NextDueIn: 6 * time.Minute,
			Limits: []activities.WebhookLimit{{WebhookID: "wsu_a", Limit: 7, SlowStart: true}}},
		activities.ShardRoundResult{Stopped: "test over"},
	)
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []activities.LearnedLimits{
		{},
		{Webhooks: []activities.WebhookLimit{{WebhookID: "wsu_a", Limit: 5}},
			Destinations: []activities.DestinationLimit{{Destination: host, Limit: 6}}},
		// Twelve minutes after the first round: its destination is forgotten.
		{Webhooks: []activities.WebhookLimit{{WebhookID: "wsu_a", Limit: 7, SlowStart: true}}},
	}
	if len(*inputs) != len(want) {
		t.Fatalf("%d rounds, want %d", len(*inputs), len(want))
	}
	for i, in := range *inputs {
		if fmt.Sprint(in.Learned) != fmt.Sprint(want[i]) {
			t.Errorf("round %d learned %+v, want %+v", i+1, in.Learned, want[i])
		}
	}

	env, inputs = newShardEnv(t, activities.ShardRoundResult{Pending: true,
		Destinations: []activities.DestinationLimit{{Destination: host, Limit: 6}}})
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	var next workflows.ShardInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if len(next.Learned.Destinations) != 1 || next.Learned.Destinations[0].Limit != 6 {
		t.Fatalf("continued as new with %+v, want the destination's limit", next.Learned)
	}
	env, inputs = newShardEnv(t, activities.ShardRoundResult{Stopped: "test over"})
	env.ExecuteWorkflow(workflows.ShardWorkflowName, next)
	if len(*inputs) != 1 || fmt.Sprint((*inputs)[0].Learned) != fmt.Sprint(next.Learned) {
		t.Errorf("the next run's first round learned %+v, want %+v", (*inputs)[0].Learned, next.Learned)
	}
}

// TestShard_AWakeDuringARoundBringsAnotherRound: a wake signal that comes
// while a round runs is followed by a round that begins after it, even
// when the round found nothing more due: the API signals a shard once a
// round and counts on it (dispatch.Waker.FollowRoundStarts).
func TestShard_AWakeDuringARoundBringsAnotherRound(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Shard, workflow.RegisterOptions{Name: workflows.ShardWorkflowName})
	var a *activities.Rounds
	env.RegisterActivity(a)
	rounds := 0
	env.OnActivity(a.DeliverShardRound, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.ShardRoundInput) (activities.ShardRoundResult, error) {
			rounds++
			if rounds == 1 {
				env.SignalWorkflow(workflows.WakeSignal, nil) // arrives while the round runs
			}
			return activities.ShardRoundResult{}, nil // nothing due after it
		})
	env.RegisterDelayedCallback(func() {
		if rounds != 2 {
			t.Errorf("%d rounds, want 2: the first, and one for the wake-up during it", rounds)
		}
		env.CancelWorkflow()
	}, time.Hour)
	env.ExecuteWorkflow(workflows.ShardWorkflowName, shard)
}
