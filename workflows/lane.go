package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// LaneInput is a webhook's lane: what it delivers to and how.
type LaneInput struct {
	SubscriptionID string
	AccountID      int64
	// PageSize is how many due deliveries a round takes when the receiver
	// answers quickly; a slow receiver gets rounds of MaxInFlight.
	PageSize int
	// MaxInFlight caps the attempts in flight to this webhook.
	MaxInFlight int
	// AttemptTimeout bounds one attempt (spec: 10s).
	AttemptTimeout time.Duration
	// IdleTimeout is how long a lane with nothing pending waits for more
	// before it ends (the next event starts it again).
	IdleTimeout time.Duration
	// Linger is how long a round keeps looking for newly due deliveries
	// before it returns: a stream of events is taken straight from the
	// database rather than through a wake-up each.
	Linger time.Duration
}

// Lane tuning that is part of the workflow's logic (a slow receiver,
// activities.SlowAttempt, gets rounds of MaxInFlight deliveries).
const (
	// roundsPerRun bounds a run's history (each round is one marker
	// holding its outcomes); the lane then continues as new.
	roundsPerRun = 200
	// roundRetention is how long a round that cannot run (its database is
	// down) is retried before the lane fails; the sweeper starts it again.
	roundRetention = 7 * 24 * time.Hour
)

// Lane delivers a webhook's deliveries: each round takes a page of its due
// deliveries and attempts them (one local activity, DeliverDue, whose
// marker in the history holds every attempt's outcome), then the lane
// waits, on a durable timer, for the next delivery due (a retry) or for a
// wake signal (new deliveries), and ends once nothing is pending for
// IdleTimeout. One lane per webhook (workflow id webhook/{id}) caps what
// that webhook gets at once and keeps its slow or failing receiver from
// holding up anybody else's.
func Lane(ctx workflow.Context, in LaneInput) error {
	info := workflow.GetInfo(ctx)
	wake := workflow.GetSignalChannel(ctx, WakeSignal)
	var a *activities.Activities
	limit := in.PageSize
	for round := 1; ; round++ {
		drain(wake)
		roundCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    activities.RoundBudget(limit, in.MaxInFlight, in.AttemptTimeout) + in.Linger,
			ScheduleToCloseTimeout: roundRetention,
			// A round that could not run (database down) runs again; the
			// deliveries it had claimed come back when their lease ends.
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		})
		var res activities.RoundResult
		err := workflow.ExecuteLocalActivity(roundCtx, a.DeliverDue, activities.RoundInput{
			SubscriptionID: in.SubscriptionID, AccountID: in.AccountID, Limit: limit, MaxInFlight: in.MaxInFlight,
			WorkflowID: info.WorkflowExecution.ID, WorkflowRunID: info.WorkflowExecution.RunID, Linger: in.Linger,
		}).Get(ctx, &res)
		if err != nil {
			return fmt.Errorf("lane round %d: %w", round, err)
		}
		if res.Stopped != "" {
			return nil
		}
		limit = in.PageSize
		if res.Slowest() >= activities.SlowAttempt {
			limit = max(in.MaxInFlight, 1)
		}
		if round >= roundsPerRun || info.GetContinueAsNewSuggested() {
			drain(wake) // the next run starts with a round anyway
			return workflow.NewContinueAsNewError(ctx, LaneWorkflowName, in)
		}
		if res.Pending && res.NextDueIn <= 0 {
			continue
		}
		wait, idle := in.IdleTimeout, !res.Pending
		if res.Pending {
			wait = res.NextDueIn
		}
		if !waitForWork(ctx, wake, wait) && idle {
			return nil
		}
	}
}

// waitForWork waits for a wake signal or for d; true when woken.
func waitForWork(ctx workflow.Context, wake workflow.ReceiveChannel, d time.Duration) bool {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(timerCtx, d)
	woken := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		woken = true
	})
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	if woken {
		cancelTimer()
		return true
	}
	// A signal that arrived with the timer still counts.
	return wake.ReceiveAsync(nil)
}

// drain takes the wake signals already received: the round about to run
// sees every delivery they announced.
func drain(wake workflow.ReceiveChannel) {
	for wake.ReceiveAsync(nil) {
	}
}
