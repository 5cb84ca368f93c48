package worker_test

import (
	"context"
	"testing"
	"time"

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
	// Events one after another until both workers have run rounds: a round
	// takes what comes within its claim window (3 s), so this is a round
	// every few events; each goes to either worker.
	var byWorker map[string]int
	events := 0
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		events++
		if d := e.waitDelivery(e.post(webhooks.EventRunCompleted, int64(events), ""), sub.ID); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
			t.Fatalf("event %d: %s after %d attempts", events, d.Status, d.AttemptCount)
		}
		if byWorker = e.roundsByWorker(e.shardOf(sub.ID)); len(byWorker) == 2 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got := len(rc.got()); got != events {
		t.Errorf("receiver got %d requests for %d deliveries", got, events)
	}
	if len(byWorker) != 2 || byWorker["second-worker"] == 0 {
		t.Errorf("after %d events the shard's rounds ran on %v, want both workers", events, byWorker)
	}
}

// roundsByWorker counts the shard's rounds run as activities (its current
// run), by the identity of the worker that started each.
func (e *env) roundsByWorker(workflowID string) map[string]int {
	e.t.Helper()
	scheduled := map[int64]bool{}
	byWorker := map[string]int{}
	iter := e.temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			e.t.Fatal(err)
		}
		if s := ev.GetActivityTaskScheduledEventAttributes(); s != nil && s.GetActivityType().GetName() == "DeliverShardRound" {
			scheduled[ev.GetEventId()] = true
		}
		if s := ev.GetActivityTaskStartedEventAttributes(); s != nil && scheduled[s.GetScheduledEventId()] {
			byWorker[s.GetIdentity()]++
		}
	}
	return byWorker
}
