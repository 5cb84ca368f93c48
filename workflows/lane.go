package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// LaneInput is a webhook's own lane. Its tuning (page size, in-flight
// cap, linger, idle timeout, attempt timeout) is the worker's.
type LaneInput struct {
	SubscriptionID string
	AccountID      int64
}

// Lane tuning that is part of the workflow's logic (a slow receiver,
// activities.SlowAttempt, gets rounds of its in-flight cap).
const (
	// roundsPerRun bounds a run's history (each round is one marker
	// holding its outcomes); the lane then continues as new.
	roundsPerRun = 200
	// roundRetention is how long a round that cannot run (its database is
	// down) is retried before the lane fails; the sweeper starts it again.
	roundRetention = 10 * time.Minute
)

// Lane delivers the deliveries of one webhook whose route is its own (or
// held): a webhook moves here from its shard when one of its attempts
// outlasts the shared rounds' patience (a slow or hung receiver), so it
// never holds up a round shared with other webhooks; while its breaker
// holds its deliveries and while it drains them after the close; and for
// as long as it has a rate limit
// (deliveries/routes.go). Each round takes a page of its due deliveries and
// attempts them (one local activity, DeliverDue, whose marker in the
// history holds every attempt's outcome); then the lane waits, on a
// durable timer, for the next delivery due (a retry) or for a wake signal
// (new deliveries). Once nothing is pending for the idle timeout, the
// webhook goes back to its shard (one with a rate limit stays on its own
// route) and the lane ends.
func Lane(ctx workflow.Context, in LaneInput) error {
	info := workflow.GetInfo(ctx)
	wake := workflow.GetSignalChannel(ctx, WakeSignal)
	poke := workflow.NewBufferedChannel(ctx, 1)
	if err := registerOperatorUpdates(ctx, operatorScope{WebhookID: in.SubscriptionID}, poke); err != nil {
		return err
	}
	var a *activities.Rounds
	var routes *activities.Routes
	slow := false
	var rate *activities.RateState
	for round := 1; ; round++ {
		drain(wake)
		drain(poke)
		roundCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			// A round takes at most a page (of its cap, when the receiver
			// is slow): waves of attempts of at most DELIVERY_TIMEOUT each.
			StartToCloseTimeout:    15 * time.Minute,
			ScheduleToCloseTimeout: roundRetention,
			// A round that could not run (database down) runs again; the
			// deliveries it had claimed come back when their lease ends.
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		})
		var res activities.RoundResult
		err := workflow.ExecuteLocalActivity(roundCtx, a.DeliverDue, activities.RoundInput{
			SubscriptionID: in.SubscriptionID, AccountID: in.AccountID, Slow: slow,
			WorkflowID: info.WorkflowExecution.ID, WorkflowRunID: info.WorkflowExecution.RunID, Rate: rate,
		}).Get(ctx, &res)
		if err != nil {
			return fmt.Errorf("lane round %d: %w", round, err)
		}
		if res.Stopped != "" {
			return nil
		}
		slow = res.Slowest() >= activities.SlowAttempt
		rate = res.Rate
		if round >= roundsPerRun || info.GetContinueAsNewSuggested() {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			drain(wake) // the next run starts with a round anyway
			return workflow.NewContinueAsNewError(ctx, LaneWorkflowName, in)
		}
		wait, idle := res.IdleFor, !res.Pending
		if wait <= 0 {
			wait = time.Minute
		}
		if res.Pending {
			wait = max(res.NextDueIn, betweenRounds) // a new workflow task a round
		}
		if waitForWork(ctx, wake, poke, wait) || !idle {
			continue
		}
		// Idle: the webhook goes back to its shard, and what arrived
		// meanwhile goes with it (one with a rate limit stays on its own
		// route: its next delivery starts the lane again).
		var back activities.ReturnResult
		if err := workflow.ExecuteLocalActivity(roundCtx, routes.ReturnIdleToShard, in.SubscriptionID).Get(ctx, &back); err != nil {
			return fmt.Errorf("return %s to its shard: %w", in.SubscriptionID, err)
		}
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return err
		}
		return nil
	}
}

// waitForWork waits for a wake signal, a poke (an operator's Update gave
// work) or d (0: no timer); true when woken.
func waitForWork(ctx workflow.Context, wake, poke workflow.ReceiveChannel, d time.Duration) bool {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	woken := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		woken = true
	})
	sel.AddReceive(poke, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		woken = true
	})
	if d > 0 {
		sel.AddFuture(workflow.NewTimer(timerCtx, d), func(workflow.Future) {})
	}
	sel.Select(ctx)
	if woken {
		return true
	}
	// A signal that arrived with the timer still counts.
	return wake.ReceiveAsync(nil) || poke.ReceiveAsync(nil)
}

// drain takes the wake signals already received: the round about to run
// sees every delivery they announced.
func drain(c workflow.ReceiveChannel) {
	for c.ReceiveAsync(nil) {
	}
}
