package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// ShardInput is a delivery shard: shard Shard of Shards, owning a range of
// lane keys (deliveries.ShardKeys). Report carries attempts handed over by
// earlier rounds whose outcomes are still to be reported (across
// continue-as-new).
type ShardInput struct {
	Shard  int
	Shards int
	Report []activities.HandedOver `json:",omitempty"`
	// Steady carries the last round's steadiness into the next run
	// (ShardRoundInput).
	Steady bool `json:",omitempty"`
	// OnAnyWorker carries where the last round said the next runs
	// (ShardRoundResult.OnAnyWorker) into the next run.
	OnAnyWorker bool `json:",omitempty"`
	// Learned carries the in-flight limits the last run's rounds learned
	// (learnedLimits) into the next run.
	Learned activities.LearnedLimits `json:",omitzero"`
}

// Shard tuning that is part of the workflow's logic.
const (
	// shardRoundsPerRun bounds a shard run's history (each round is one
	// marker); the shard then continues as new.
	shardRoundsPerRun = 500
	// shardRoundRetention bounds how long one round that cannot run (its
	// database is down) is retried inside the worker before the shard
	// waits shardRoundBackoff and runs a new round: a long outage adds a
	// few events per shardRoundBackoff, and continue-as-new bounds them.
	shardRoundRetention = 12 * time.Minute
	shardRoundBackoff   = 30 * time.Second
	// shardRoundTimeout bounds one round; a round that cannot record its
	// outcomes (the database is away) keeps trying until shortly before,
	// so a database outage of up to about ten minutes sends nothing twice.
	// Nothing else of the shard can run meanwhile: its database is away.
	shardRoundTimeout = 10 * time.Minute
	// shardRoundHeartbeatTimeout is how long a round that runs as an
	// activity any worker takes may go without a heartbeat (its worker
	// died) before another worker runs it again; a local activity's round
	// needs none, as it ends with its worker's workflow task.
	shardRoundHeartbeatTimeout = 30 * time.Second
)

// betweenRounds is the least wait between two rounds of a shard or lane,
// even when deliveries are due at once: a round is a local activity, and
// a workflow that ran the next one at once stayed in the same workflow
// task. With steady traffic a shard always has something due, so its task
// ran for as long as the traffic, heartbeating every 8 s, and on a busy box
// those heartbeats failed ("Workflow task not found", up to 12 attempts in
// a row) and the rounds ran again on the other worker. A timer ends the
// task after each round: one timer and one workflow task a round.
const betweenRounds = time.Millisecond

// Shard delivers the due deliveries of every webhook whose lane key is in
// its range and whose route is shared: each round (DeliverShardRound, a
// local activity whose marker holds every attempt's outcome, or with
// DELIVERY_SHARD_ROUNDS=any-worker an activity any worker takes, its
// result holding them: deliverShardRound) claims
// what may go now across those webhooks, in turns by account, starts each
// attempt at once, records outcomes as they arrive and claims again as
// attempts end. No round waits for a slow receiver longer than the
// patience: an attempt
// still running then is handed over (its outcome, recorded when it ends,
// is reported by a later round) and its webhook moves to a lane of its own.
// Between rounds the shard waits on a durable timer for the next retry, or
// for a wake signal or an operator's Update. Shards live as long as the
// service: they continue as new, and never end while their number stays.
func Shard(ctx workflow.Context, in ShardInput) error {
	info := workflow.GetInfo(ctx)
	wake := workflow.GetSignalChannel(ctx, WakeSignal)
	poke := workflow.NewBufferedChannel(ctx, 1)
	if err := registerOperatorUpdates(ctx, operatorScope{}, poke); err != nil {
		return err
	}
	report := in.Report
	steady := in.Steady           // the last round ended with deliveries due at once
	onAnyWorker := in.OnAnyWorker // where the last round said the next runs
	learned := newLearnedLimits(in.Learned, workflow.Now(ctx))
	for round := 1; ; round++ {
		drain(wake)
		drain(poke)
		var res activities.ShardRoundResult
		err := deliverShardRound(ctx, onAnyWorker, activities.ShardRoundInput{
			Shard: in.Shard, Shards: in.Shards, WorkflowID: info.WorkflowExecution.ID,
			WorkflowRunID: info.WorkflowExecution.RunID, Report: report, Steady: steady,
			Learned: learned.current(workflow.Now(ctx)),
		}).Get(ctx, &res)
		steady = err == nil && res.Pending && res.NextDueIn <= 0
		if err == nil {
			onAnyWorker = res.OnAnyWorker
			learned.add(res.Limits, res.Destinations, workflow.Now(ctx))
		}
		if err == nil && res.Stopped != "" {
			workflow.GetLogger(ctx).Info("shard stopped", "reason", res.Stopped)
			return nil
		}
		if round >= shardRoundsPerRun || info.GetContinueAsNewSuggested() {
			if err == nil {
				report = res.Report
			}
			if werr := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); werr != nil {
				return werr
			}
			drain(wake)
			return workflow.NewContinueAsNewError(ctx, ShardWorkflowName,
				ShardInput{Shard: in.Shard, Shards: in.Shards, Report: report, Steady: steady, OnAnyWorker: onAnyWorker,
					Learned: learned.current(workflow.Now(ctx))})
		}
		if err != nil {
			// The round could not run for shardRoundRetention (the database
			// is down): what it claimed comes back when the leases end.
			workflow.GetLogger(ctx).Warn("shard round failed; trying again", "error", err.Error())
			waitForWork(ctx, wake, poke, shardRoundBackoff)
			continue
		}
		report = res.Report
		var wait time.Duration // 0: until woken
		if res.Pending {
			// Due now: the next round goes after a timer of betweenRounds,
			// which ends this workflow task (see betweenRounds).
			wait = max(res.NextDueIn, betweenRounds)
		}
		if len(report) > 0 && (wait == 0 || res.ReportIn < wait) {
			wait = max(res.ReportIn, time.Millisecond)
		}
		waitForWork(ctx, wake, poke, wait)
	}
}

// deliverShardRound runs one round of the shard: a local activity on the
// worker that holds the workflow, or, onAnyWorker, an activity any worker
// takes (DELIVERY_SHARD_ROUNDS=any-worker), never eagerly on this one.
// Either way a round keeps its receivers' outcomes while the database is
// away, until shortly before shardRoundTimeout (activities.recordDeadline).
func deliverShardRound(ctx workflow.Context, onAnyWorker bool, in activities.ShardRoundInput) workflow.Future {
	var a *activities.Rounds
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}
	if onAnyWorker {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    shardRoundTimeout,
			ScheduleToCloseTimeout: shardRoundRetention,
			HeartbeatTimeout:       shardRoundHeartbeatTimeout,
			RetryPolicy:            retry,
			DisableEagerExecution:  true,
		}), a.DeliverShardRound, in)
	}
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    shardRoundTimeout,
		ScheduleToCloseTimeout: shardRoundRetention,
		RetryPolicy:            retry,
	}), a.DeliverShardRound, in)
}

// ShardWorkflowID is the id of shard n of shards of the deployment whose
// task queue is taskQueue, as people read it: webhooks/shard-3-of-8.
// Deployments sharing a namespace have their own shards.
func ShardWorkflowID(taskQueue string, n, shards int) string {
	return fmt.Sprintf("%s/shard-%d-of-%d", taskQueue, n, shards)
}
