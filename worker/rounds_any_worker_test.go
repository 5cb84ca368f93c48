package worker_test

import (
	"context"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/worker"
)

// TestShards_RoundsOnAnyWorkerSpreadOverTheWorkers: with
// DELIVERY_SHARD_ROUNDS=any-worker one shard's rounds are activities that
// both of two workers take (its first round, a local activity, runs where
// the workflow is), and every delivery arrives once.
func TestShards_RoundsOnAnyWorkerSpreadOverTheWorkers(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_SHARDS": "1", "DELIVERY_SHARD_ROUNDS": "any-worker"})
	second, err := client.Dial(client.Options{HostPort: e.cfg.TemporalAddress, Namespace: e.cfg.TemporalNamespace,
		Identity: "second-worker", Logger: sdklog.NewStructuredLogger(discardLogger())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	enginetest.StartWorker(t, worker.Deps{Config: e.cfg, Logger: discardLogger(), Pool: e.db.Pool, Temporal: second})

	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	const events = 24
	for i := range events { // one after another: a round or more each
		if d := e.waitDelivery(e.post(webhooks.EventRunCompleted, int64(i+1), ""), sub.ID); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
			t.Fatalf("event %d: %s after %d attempts", i, d.Status, d.AttemptCount)
		}
	}
	if got := len(rc.got()); got != events {
		t.Errorf("receiver got %d requests for %d deliveries", got, events)
	}

	scheduled := map[int64]bool{}
	byWorker := map[string]int{}
	iter := e.temporal.GetWorkflowHistory(context.Background(), e.shardOf(sub.ID), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if s := ev.GetActivityTaskScheduledEventAttributes(); s != nil && s.GetActivityType().GetName() == "DeliverShardRound" {
			scheduled[ev.GetEventId()] = true
		}
		if s := ev.GetActivityTaskStartedEventAttributes(); s != nil && scheduled[s.GetScheduledEventId()] {
			byWorker[s.GetIdentity()]++
		}
	}
	if len(byWorker) != 2 || byWorker["second-worker"] == 0 {
		t.Errorf("the shard's rounds ran on %v, want both workers", byWorker)
	}
}
