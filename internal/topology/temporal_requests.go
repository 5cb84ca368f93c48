package topology

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TemporalRequests are the requests the deployment's processes have made of
// the Temporal server so far, by operation (the SDK's temporal_request and
// temporal_long_request counters on each process's /metrics): what the
// server does for the service, counted rather than timed, so a figure per
// delivery holds whatever the box's speed.
type TemporalRequests map[string]float64

// temporalRequestMetrics are the SDK counters summed, by their name on
// /metrics: requests, and long polls (PollWorkflowTaskQueue, ...). The
// OpenTelemetry bridge exposes them as gauges without the _total suffix;
// a Prometheus client would name them with it.
var temporalRequestMetrics = []string{"temporal_request", "temporal_long_request", "temporal_request_total", "temporal_long_request_total"}

// ReadTemporalRequests sums the SDK's request counters by operation over the
// admin endpoints (ADMIN_ADDR) of the API and the workers.
func ReadTemporalRequests(ctx context.Context, adminAddrs []string) (TemporalRequests, error) {
	out := TemporalRequests{}
	for _, addr := range adminAddrs {
		if err := readTemporalRequests(ctx, addr, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readTemporalRequests(ctx context.Context, addr string, into TemporalRequests) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("read %s/metrics: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read %s/metrics: %s", addr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("parse %s/metrics: %w", addr, err)
	}
	for _, name := range temporalRequestMetrics {
		f, ok := families[name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			into[requestKey(m.GetLabel())] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return nil
}

// requestKey names a request by its operation, and for the requests one
// workflow makes (RespondWorkflowTaskCompleted, ...) by its type too:
// "RespondWorkflowTaskCompleted DeliverShard".
func requestKey(labels []*dto.LabelPair) string {
	op, wf := "?", ""
	for _, l := range labels {
		switch l.GetName() {
		case "operation":
			op = l.GetValue()
		case "workflow_type":
			if v := l.GetValue(); v != "none" {
				wf = v
			}
		}
	}
	if wf == "" {
		return op
	}
	return op + " " + wf
}

// Since is what was requested after before.
func (r TemporalRequests) Since(before TemporalRequests) TemporalRequests {
	out := TemporalRequests{}
	for op, n := range r {
		if d := n - before[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}

// TemporalRequestCost is one operation's requests per delivery.
type TemporalRequestCost struct {
	Operation   string
	PerDelivery float64
}

// PerDelivery lists each operation's requests per delivery, most first,
// and their total last ("all").
func (r TemporalRequests) PerDelivery(deliveries int) []TemporalRequestCost {
	if deliveries <= 0 || len(r) == 0 {
		return nil
	}
	var out []TemporalRequestCost
	var all float64
	for op, n := range r {
		out = append(out, TemporalRequestCost{Operation: op, PerDelivery: n / float64(deliveries)})
		all += n
	}
	slices.SortFunc(out, func(a, b TemporalRequestCost) int {
		return cmp.Or(cmp.Compare(b.PerDelivery, a.PerDelivery), strings.Compare(a.Operation, b.Operation))
	})
	return append(out, TemporalRequestCost{Operation: "all", PerDelivery: all / float64(deliveries)})
}

// TemporalRequestTable prints costs as a table.
func TemporalRequestTable(costs []TemporalRequestCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s %12s\n", "Temporal operation", "requests/del")
	for _, c := range costs {
		fmt.Fprintf(&b, "%-44s %12.4f\n", c.Operation, c.PerDelivery)
	}
	return b.String()
}
