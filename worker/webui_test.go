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

// laneRounds returns the results of the DeliverDue rounds in a lane run's
// history: each round is a local activity, recorded as a marker.
func (e *env) laneRounds(workflowID, runID string) []activities.RoundResult {
	e.t.Helper()
	var rounds []activities.RoundResult
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
		if marker.ActivityType != "DeliverDue" {
			continue
		}
		var res activities.RoundResult
		if result := m.GetDetails()["result"]; result != nil {
			if err := converter.GetDefaultDataConverter().FromPayloads(result, &res); err != nil {
				e.t.Fatalf("DeliverDue result: %v", err)
			}
		}
		rounds = append(rounds, res)
	}
	return rounds
}

// TestDeliveries_FoundInTheTemporalWebUIByWebhook checks what the operator
// guide promises: a webhook's lane is found by WebhookId and by
// WebhookAccountId; each delivery record names the lane run that made its
// last attempt, and that run's history holds the round that made it, with
// its outcome.
func TestDeliveries_FoundInTheTemporalWebUIByWebhook(t *testing.T) {
	e := newEnv(t, true, nil)
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
		lane := workflows.LaneWorkflowID(tc.sub)
		rec := e.record(ev, tc.sub)
		if rec.WorkflowID != lane || rec.WorkflowRunID == "" {
			t.Errorf("record of %s names workflow %q run %q, want %q and a run", tc.sub, rec.WorkflowID, rec.WorkflowRunID, lane)
			continue
		}
		// A round's marker is written when the round returns, which may be
		// a moment after its outcomes were recorded (it lingers for more).
		var got []activities.Outcome
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got = got[:0]
			for _, round := range e.laneRounds(rec.WorkflowID, rec.WorkflowRunID) {
				for _, o := range round.Outcomes {
					if o.DeliveryID == rec.ID {
						got = append(got, activities.Outcome{Attempt: o.Attempt, Status: o.Status, StatusCode: o.StatusCode})
					}
				}
			}
			if slices.Equal(got, tc.attempts) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(got, tc.attempts) {
			t.Errorf("lane run %s/%s rounds have %+v for %s, want %+v", rec.WorkflowID, rec.WorkflowRunID, got, rec.ID, tc.attempts)
		}

		attrs := e.searchAttributes(lane)
		if attrs[workflows.SearchWebhookID.GetName()] != tc.sub || attrs[workflows.SearchAccountID.GetName()] != float64(e.account.ID) {
			t.Errorf("lane %s search attributes = %v, want its webhook and account %d", lane, attrs, e.account.ID)
		}
		query := fmt.Sprintf("%s = %q", workflows.SearchWebhookID.GetName(), tc.sub)
		if found := e.findWorkflows(query); !slices.Equal(found, []string{lane}) {
			t.Errorf("%s found %v, want [%s]", query, found, lane)
		}
	}

	// Account ids restart with each test's database while the dev server is
	// shared, so other tests' lanes may share the account id: ours must be
	// among them.
	query := fmt.Sprintf("%s = %d AND %s = %q", workflows.SearchAccountID.GetName(), e.account.ID,
		workflows.SearchWebhookID.GetName(), okSub.ID)
	if found := e.findWorkflows(query); !slices.Equal(found, []string{workflows.LaneWorkflowID(okSub.ID)}) {
		t.Errorf("%s found %v", query, found)
	}
	query = fmt.Sprintf("%s = %d", workflows.SearchAccountID.GetName(), e.account.ID)
	found := e.findWorkflows(query)
	for _, sub := range []string{okSub.ID, flakySub.ID} {
		if !slices.Contains(found, workflows.LaneWorkflowID(sub)) {
			t.Errorf("%s found %v, want the lane of %s among them", query, found, sub)
		}
	}
}
