package topology

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadTemporalRequests: the SDK's request counters are summed by
// operation over every process, and the difference of two readings is
// per delivery, most first, with the total last.
func TestReadTemporalRequests(t *testing.T) {
	metrics := []string{
		`# HELP temporal_request_total x
# TYPE temporal_request_total counter
temporal_request_total{namespace="default",operation="SignalWithStartWorkflowExecution",otel_scope_name="go.temporal.io/sdk"} 30
temporal_request_total{namespace="default",operation="RespondWorkflowTaskCompleted",otel_scope_name="go.temporal.io/sdk"} 10
# HELP temporal_long_request_total x
# TYPE temporal_long_request_total counter
temporal_long_request_total{operation="PollWorkflowTaskQueue"} 12
# HELP go_goroutines x
# TYPE go_goroutines gauge
go_goroutines 42
`,
		`# HELP temporal_request x
# TYPE temporal_request gauge
temporal_request{operation="RespondWorkflowTaskCompleted",workflow_type="none"} 6
temporal_request{operation="RespondWorkflowTaskCompleted",workflow_type="DeliverShard"} 4
`,
	}
	var addrs []string
	for _, m := range metrics {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte(m))
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	got, err := ReadTemporalRequests(context.Background(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	want := TemporalRequests{"SignalWithStartWorkflowExecution": 30, "RespondWorkflowTaskCompleted": 16,
		"RespondWorkflowTaskCompleted DeliverShard": 4, "PollWorkflowTaskQueue": 12}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s = %v, want %v", op, got[op], n)
		}
	}

	before := TemporalRequests{"SignalWithStartWorkflowExecution": 10, "RespondWorkflowTaskCompleted": 16}
	costs := got.Since(before).PerDelivery(4)
	wantCosts := []TemporalRequestCost{{"SignalWithStartWorkflowExecution", 5}, {"PollWorkflowTaskQueue", 3},
		{"RespondWorkflowTaskCompleted DeliverShard", 1}, {"all", 9}}
	if len(costs) != len(wantCosts) {
		t.Fatalf("costs %v, want %v", costs, wantCosts)
	}
	for i := range wantCosts {
		if costs[i] != wantCosts[i] {
			t.Errorf("costs[%d] = %v, want %v", i, costs[i], wantCosts[i])
		}
	}
	if table := TemporalRequestTable(costs); !strings.Contains(table, "SignalWithStartWorkflowExecution") || !strings.Contains(table, "9.0000") {
		t.Errorf("table lacks its rows:\n%s", table)
	}
}

func TestReadTemporalRequests_AProcessThatDoesNotAnswerIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := ReadTemporalRequests(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")}); err == nil {
		t.Fatal("a 404 /metrics read as no requests")
	}
}
