package worker_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestHistories_ReplayWithTheCurrentCode runs each workflow type for real
// (a shard that delivers, hands over a slow attempt and reports it, and
// takes an operator's Updates; the slow webhook's own lane with a retry on
// a durable timer, which then ends idle; a test delivery, a replay, the
// retention purge and the sweeper), and replays every history with the
// current workflow code. With WEBHOOKS_WRITE_REPLAY_HISTORY=1 it also
// stores them in workflows/testdata, which workflows' replay test replays
// from then on: record them once a workflow shape ships, and change
// shipped workflow code with workflow.GetVersion.
func TestHistories_ReplayWithTheCurrentCode(t *testing.T) {
	// A 11 s backoff is above the workflow task timeout, so the retry is a
	// durable timer in the history; the lane ends after 2 s idle.
	e := newEnv(t, true, map[string]string{
		"DELIVERY_RETRY_INITIAL_INTERVAL": "11s", "DELIVERY_RETRY_MAX_INTERVAL": "11s",
		"DELIVERY_LANE_IDLE_TIMEOUT": "2s", "DELIVERY_SHARED_PATIENCE": "300ms",
	})
	// The first attempt outlasts the shard's patience (then fails): the
	// webhook moves to its own lane, which makes the retry.
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			time.Sleep(time.Second)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	ev := e.post(webhooks.EventRunCompleted, 1, "")
	if d := e.waitDelivery(ev, sub.ID); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 2 {
		t.Fatalf("delivery %s after %d attempts, want succeeded at the second", d.Status, d.AttemptCount)
	}
	ctx := context.Background()
	lane := workflows.LaneWorkflowID(sub.ID)
	wait(t, e.temporal, lane)
	shard := e.shardOf(sub.ID)
	for _, u := range []string{workflows.PauseWebhookUpdate, workflows.ResumeWebhookUpdate} {
		if _, err := e.update(shard, u, workflows.WebhookRequest{WebhookID: sub.ID}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}

	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil)
	if code != http.StatusOK {
		t.Fatalf("test endpoint: %d %v", code, out)
	}
	testRun := latest(t, e, workflows.TestWorkflowName)

	for _, id := range []string{workflows.RetentionScheduleID, workflows.SweepScheduleID} {
		if err := e.temporal.ScheduleClient().GetHandle(ctx, id).Trigger(ctx, triggerNow()); err != nil {
			t.Fatal(err)
		}
	}
	// A replay of an event skipped while the webhook was inactive.
	_, since := missedWhileInactive(t, e, sub.ID, 1)
	replayID, _ := e.startReplay(sub.ID, map[string]any{"since": since.Format(time.RFC3339)})
	wait(t, e.temporal, workflows.ReplayWorkflowID(replayID))

	histories := map[string]*history.History{
		"shard.json":         fetch(t, e.temporal, shard, ""),
		"lane.json":          fetch(t, e.temporal, lane, ""),
		"test_delivery.json": fetch(t, e.temporal, testRun.id, testRun.run),
		"replay.json":        fetch(t, e.temporal, workflows.ReplayWorkflowID(replayID), ""),
	}
	for file, name := range map[string]string{"purge.json": workflows.RetentionWorkflowName, "sweep.json": workflows.SweepWorkflowName} {
		var r run
		waitFor(t, func() bool { r = latest(t, e, name); return r.closed })
		histories[file] = fetch(t, e.temporal, r.id, r.run)
	}
	for file, h := range histories {
		replayer := sdkworker.NewWorkflowReplayer()
		workflows.RegisterAll(replayer)
		if err := replayer.ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("%s does not replay: %v", file, err)
		}
		if os.Getenv("WEBHOOKS_WRITE_REPLAY_HISTORY") == "1" {
			b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "workflows", "testdata", file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type run struct {
	id, run string
	closed  bool
}

// latest is the newest workflow of a type in the test's task queue.
func latest(t *testing.T, e *env, workflowType string) run {
	t.Helper()
	var r run
	waitFor(t, func() bool {
		resp, err := e.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "TaskQueue = '" + e.cfg.TemporalTaskQueue + "' AND WorkflowType = '" + workflowType + "'"})
		if err != nil || len(resp.Executions) == 0 {
			return false
		}
		x := resp.Executions[0]
		r = run{id: x.Execution.WorkflowId, run: x.Execution.RunId, closed: x.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING}
		return true
	})
	return r
}

// wait waits until a workflow has closed.
func wait(t *testing.T, tc client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tc.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("workflow %s: %v", id, err)
	}
}

func fetch(t *testing.T, tc client.Client, id, runID string) *history.History {
	t.Helper()
	iter := tc.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &history.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}

// fetchRuns is the history of workflow id's latest run and of up to
// runs-1 runs before it that continued as new into it, oldest first: a
// shard may continue as new between a delivery and the test's look.
func fetchRuns(t *testing.T, tc client.Client, id string, runs int) *history.History {
	t.Helper()
	all := &history.History{}
	runID := ""
	for range runs {
		h := fetch(t, tc, id, runID)
		all.Events = append(h.Events, all.Events...)
		if len(h.Events) == 0 {
			break
		}
		runID = h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	return all
}
