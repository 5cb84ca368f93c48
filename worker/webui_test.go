package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// searchAttributes decodes a workflow's custom search attributes.
func (e *env) searchAttributes(workflowID string) map[string]any {
	e.t.Helper()
	desc, err := e.temporal.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		e.t.Fatalf("describe %s: %v", workflowID, err)
	}
	out := map[string]any{}
	for name, p := range desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields() {
		var v any
		if err := json.Unmarshal(p.GetData(), &v); err != nil {
			e.t.Fatalf("search attribute %s of %s: %v", name, workflowID, err)
		}
		out[name] = v
	}
	return out
}

// findWorkflows runs a visibility query (what an operator types in the Web
// UI's search box) until it finds something or 15s pass, and returns the
// workflow ids found.
func (e *env) findWorkflows(query string) []string {
	e.t.Helper()
	var found []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := e.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: e.cfg.TemporalNamespace, Query: query,
		})
		if err != nil {
			e.t.Fatalf("list %q: %v", query, err)
		}
		found = found[:0]
		for _, wf := range resp.GetExecutions() {
			found = append(found, wf.GetExecution().GetWorkflowId())
		}
		if len(found) > 0 {
			break
		}
	}
	return found
}

// roundOutcomes returns the outcomes that the rounds of a shard or lane run
// list in its history (each round is a local activity, recorded as a
// marker: DeliverShardRound's outcomes and reported hand-overs, DeliverDue's
// outcomes), in order.
func (e *env) roundOutcomes(workflowID, runID string) []activities.Outcome {
	e.t.Helper()
	var outcomes []activities.Outcome
	iter := e.temporal.GetWorkflowHistory(context.Background(), workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		hev, err := iter.Next()
		if err != nil {
			e.t.Fatalf("history of %s/%s: %v", workflowID, runID, err)
		}
		m := hev.GetMarkerRecordedEventAttributes()
		if hev.GetEventType() != enums.EVENT_TYPE_MARKER_RECORDED || m.GetMarkerName() != "LocalActivity" {
			continue
		}
		var marker struct{ ActivityType string }
		if err := converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &marker); err != nil {
			e.t.Fatalf("local activity marker data: %v", err)
		}
		result := m.GetDetails()["result"]
		if result == nil {
			continue
		}
		switch marker.ActivityType {
		case "DeliverShardRound":
			var res activities.ShardRoundResult
			if err := converter.GetDefaultDataConverter().FromPayloads(result, &res); err != nil {
				e.t.Fatalf("DeliverShardRound result: %v", err)
			}
			outcomes = append(outcomes, res.Reported...)
			outcomes = append(outcomes, res.Outcomes...)
		case "DeliverDue":
			var res activities.RoundResult
			if err := converter.GetDefaultDataConverter().FromPayloads(result, &res); err != nil {
				e.t.Fatalf("DeliverDue result: %v", err)
			}
			outcomes = append(outcomes, res.Outcomes...)
		}
	}
	return outcomes
}

// TestDeliveries_FoundInTheTemporalWebUIByWebhook checks what the operator
// guide promises: each delivery record names the shard run that made its
// last attempt, and that run's history holds the rounds that made its
// attempts, with their outcomes; a slow webhook's own lane is found by
// WebhookId and by WebhookAccountId, and lists the attempts it made.
func TestDeliveries_FoundInTheTemporalWebUIByWebhook(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_SHARED_PATIENCE": "200ms"})
	ok := newReceiver(t, status(http.StatusOK))
	okSub, _ := e.subscribe(ok.URL, allTypes, nil, true)
	flaky := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	flakySub, _ := e.subscribe(flaky.URL, allTypes, nil, true)
	ev := e.ingest(webhooks.EventRunCompleted, 5, "", okSub.ID, flakySub.ID)
	if rec := e.record(ev, flakySub.ID); rec.Status != deliveries.StatusSucceeded || rec.AttemptCount != 2 {
		t.Fatalf("flaky delivery %s after %d attempts, want succeeded at attempt 2", rec.Status, rec.AttemptCount)
	}
	for _, tc := range []struct {
		sub      string
		attempts []activities.Outcome // the rounds' outcomes for this delivery, in order
	}{
		{okSub.ID, []activities.Outcome{{Attempt: 1, Status: deliveries.StatusSucceeded, StatusCode: 200}}},
		{flakySub.ID, []activities.Outcome{
			{Attempt: 1, Status: deliveries.StatusRetrying, StatusCode: 503},
			{Attempt: 2, Status: deliveries.StatusSucceeded, StatusCode: 200},
		}},
	} {
		shard := e.shardOf(tc.sub)
		rec := e.record(ev, tc.sub)
		if rec.WorkflowID != shard || rec.WorkflowRunID == "" {
			t.Errorf("record of %s names workflow %q run %q, want %q and a run", tc.sub, rec.WorkflowID, rec.WorkflowRunID, shard)
			continue
		}
		e.requireOutcomes(rec, tc.attempts)
	}

	// A receiver slower than the shared rounds' patience: its webhook gets a
	// lane of its own, found by its search attributes, whose rounds list
	// its later attempts; the shard reports the attempt it handed over.
	slow := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			time.Sleep(600 * time.Millisecond)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	slowSub, _ := e.subscribe(slow.URL, allTypes, []int64{77}, true)
	slowEv := e.ingest(webhooks.EventRunStarted, 77, "", slowSub.ID)
	rec := e.record(slowEv, slowSub.ID)
	lane := workflows.LaneWorkflowID(slowSub.ID)
	if rec.Status != deliveries.StatusSucceeded || rec.WorkflowID != lane {
		t.Fatalf("slow webhook's delivery %s, last attempt by %q; want succeeded by its own lane", rec.Status, rec.WorkflowID)
	}
	e.requireOutcomes(rec, []activities.Outcome{{Attempt: 2, Status: deliveries.StatusSucceeded, StatusCode: 200}})
	var handed []activities.Outcome
	for deadline := time.Now().Add(30 * time.Second); len(handed) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, o := range e.roundOutcomes(e.shardOf(slowSub.ID), "") {
			if o.DeliveryID == rec.ID {
				handed = append(handed, activities.Outcome{Attempt: o.Attempt, Status: o.Status, StatusCode: o.StatusCode})
			}
		}
	}
	if want := []activities.Outcome{{Attempt: 1, Status: deliveries.StatusRetrying, StatusCode: 502}}; !slices.Equal(handed, want) {
		t.Errorf("the shard reports %+v for the attempt it handed over, want %+v", handed, want)
	}
	attrs := e.searchAttributes(lane)
	if attrs[workflows.SearchWebhookID.GetName()] != slowSub.ID || attrs[workflows.SearchAccountID.GetName()] != float64(e.account.ID) {
		t.Errorf("lane %s search attributes = %v, want its webhook and account %d", lane, attrs, e.account.ID)
	}
	query := fmt.Sprintf("%s = %q", workflows.SearchWebhookID.GetName(), slowSub.ID)
	if found := e.findWorkflows(query); !slices.Equal(found, []string{lane}) {
		t.Errorf("%s found %v, want [%s]", query, found, lane)
	}
	// Account ids restart with each test's database while the dev server is
	// shared, so other tests' workflows may share the account id: ours must
	// be among them.
	query = fmt.Sprintf("%s = %d", workflows.SearchAccountID.GetName(), e.account.ID)
	if found := e.findWorkflows(query); !slices.Contains(found, lane) {
		t.Errorf("%s found %v, want the lane of %s among them", query, found, slowSub.ID)
	}
}

// requireOutcomes waits until the rounds of the run that made a record's
// last attempt list exactly want for it (a round's marker is written when
// the round returns, a moment after its outcomes were recorded).
func (e *env) requireOutcomes(rec deliveries.Delivery, want []activities.Outcome) {
	e.t.Helper()
	var got []activities.Outcome
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = got[:0]
		for _, o := range e.roundOutcomes(rec.WorkflowID, rec.WorkflowRunID) {
			if o.DeliveryID == rec.ID {
				got = append(got, activities.Outcome{Attempt: o.Attempt, Status: o.Status, StatusCode: o.StatusCode})
			}
		}
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		e.t.Errorf("run %s/%s rounds have %+v for %s, want %+v", rec.WorkflowID, rec.WorkflowRunID, got, rec.ID, want)
	}
}
