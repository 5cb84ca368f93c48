package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
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

// TestDeliveries_FoundInTheTemporalWebUIByWebhook checks what the operator
// guide promises: an event workflow lists the webhooks it delivered to
// (WebhookIds) and, when a first attempt did not succeed, a status; a
// delivery handed over for retries has its own workflow with WebhookId and
// its final status; each record names the workflow holding its latest
// attempts; and a visibility query by webhook finds the event.
func TestDeliveries_FoundInTheTemporalWebUIByWebhook(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_RETRY_INITIAL_INTERVAL": "100ms", "DELIVERY_RETRY_MAX_INTERVAL": "100ms"})
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
	ev := e.ingest(webhooks.EventRunCompleted, 5, "")
	if res := e.waitDelivery(ev, flakySub.ID); res.Status != deliveries.StatusSucceeded || res.Attempts != 2 {
		t.Fatalf("flaky delivery %+v, want succeeded at attempt 2", res)
	}

	eventWF := deliveries.EventWorkflowID(ev)
	flakyWF := deliveries.DeliveryWorkflowID(ev, flakySub.ID)
	if e.handedOver(ev, okSub.ID) || !e.handedOver(ev, flakySub.ID) {
		t.Errorf("only the delivery whose first attempt failed should have a delivery workflow")
	}
	if rec := e.record(ev, okSub.ID); rec.WorkflowID != eventWF || rec.Status != deliveries.StatusSucceeded {
		t.Errorf("first-time delivery record: workflow %q, status %s; want %q, succeeded", rec.WorkflowID, rec.Status, eventWF)
	}
	if rec := e.record(ev, flakySub.ID); rec.WorkflowID != flakyWF || len(rec.Attempts) != 2 {
		t.Errorf("retried delivery record: workflow %q, %d attempts; want %q, 2", rec.WorkflowID, len(rec.Attempts), flakyWF)
	}

	evAttrs := e.searchAttributes(eventWF)
	wantIDs := []any{okSub.ID, flakySub.ID}
	slices.SortFunc(wantIDs, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	if got, _ := evAttrs[deliveries.SearchWebhookIDs.GetName()].([]any); !slices.Equal(got, wantIDs) {
		t.Errorf("event workflow WebhookIds = %v, want %v", evAttrs[deliveries.SearchWebhookIDs.GetName()], wantIDs)
	}
	if got := evAttrs[deliveries.SearchDeliveryStatus.GetName()]; got != deliveries.StatusRetrying {
		t.Errorf("event workflow status = %v, want retrying", got)
	}
	if got := evAttrs[deliveries.SearchAccountID.GetName()]; got != float64(e.account.ID) {
		t.Errorf("event workflow account = %v, want %d", got, e.account.ID)
	}
	dAttrs := e.searchAttributes(flakyWF)
	if dAttrs[deliveries.SearchWebhookID.GetName()] != flakySub.ID || dAttrs[deliveries.SearchDeliveryStatus.GetName()] != deliveries.StatusSucceeded {
		t.Errorf("delivery workflow attributes = %v, want its webhook and succeeded", dAttrs)
	}

	// What an operator types in the Web UI's search box.
	query := fmt.Sprintf("%s = '%s'", deliveries.SearchWebhookIDs.GetName(), okSub.ID)
	var found []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := e.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: e.cfg.TemporalNamespace, Query: query,
		})
		if err != nil {
			t.Fatalf("list %q: %v", query, err)
		}
		found = found[:0]
		for _, wf := range resp.GetExecutions() {
			found = append(found, wf.GetExecution().GetWorkflowId())
		}
		if len(found) > 0 {
			break
		}
	}
	if !slices.Equal(found, []string{eventWF}) {
		t.Errorf("%s found %v, want [%s]", query, found, eventWF)
	}
}

// An event whose deliveries all succeed first time costs its workflow the
// least: matched at ingestion (WebhookIds set at the start), one local
// activity for the page's first attempts, no search attribute upsert.
func TestEventWorkflow_MatchedAtIngestionOneActivityNoUpsert(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, status(http.StatusOK))
	var subs []string
	for range 3 {
		sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
		subs = append(subs, sub.ID)
	}
	ev := e.ingest(webhooks.EventRunStarted, 4, "")
	eventWF := deliveries.EventWorkflowID(ev)
	counts := map[enums.EventType]int{}
	iter := e.temporal.GetWorkflowHistory(context.Background(), eventWF, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		hev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		counts[hev.GetEventType()]++
	}
	if counts[enums.EVENT_TYPE_MARKER_RECORDED] != 1 || counts[enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES] != 0 ||
		counts[enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED] != 1 {
		t.Errorf("history: %d markers, %d upserts, %d workflow tasks; want 1, 0, 1", counts[enums.EVENT_TYPE_MARKER_RECORDED],
			counts[enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES], counts[enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED])
	}
	slices.Sort(subs)
	got, _ := e.searchAttributes(eventWF)[deliveries.SearchWebhookIDs.GetName()].([]any)
	var ids []string
	for _, v := range got {
		ids = append(ids, v.(string))
	}
	if !slices.Equal(ids, subs) || len(rc.got()) != 3 {
		t.Errorf("WebhookIds %v, %d arrivals; want %v and 3", ids, len(rc.got()), subs)
	}
}
