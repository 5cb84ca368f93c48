package worker_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestOutage_DefaultsSpendEverySpecAttempt: with every setting at its
// default (the breaker on at 5, on_outage "retry"; only the retry delays
// shortened), a receiver that answers 500 to everything gets each event
// exactly six times (the spec's first try and five retries), and each
// delivery then ends failed with its latest status, 500, in Recent
// Deliveries and in the webhook's http_status_code: the breaker opens
// (an incident, the signals) but does not change how a delivery ends.
func TestOutage_DefaultsSpendEverySpecAttempt(t *testing.T) {
	e := newEnv(t, true, nil)
	if e.cfg.DeliveryBreakerThreshold != 5 || e.cfg.DeliveryOnOutage != deliveries.OnOutageRetry {
		t.Fatalf("not the defaults: threshold %d, on_outage %q", e.cfg.DeliveryBreakerThreshold, e.cfg.DeliveryOnOutage)
	}
	rc := newReceiver(t, status(http.StatusInternalServerError))
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{21}, true)
	rc.setSecret(secret)
	start := time.Now()
	var ids []string
	for range 3 {
		ids = append(ids, e.post(webhooks.EventRunCompleted, 21, ""))
	}
	for _, id := range ids {
		d := e.waitDelivery(id, sub.ID)
		if d.Status != deliveries.StatusFailed || d.AttemptCount != deliveries.MaxAttempts || len(d.Attempts) != deliveries.MaxAttempts ||
			d.LastStatusCode != 500 || d.CompletedAt == nil {
			t.Errorf("delivery %s: %s after %d attempts (%d recorded), last status %d; want failed after 6, 500",
				id, d.Status, d.AttemptCount, len(d.Attempts), d.LastStatusCode)
		}
	}
	ended := time.Since(start)
	time.Sleep(time.Second) // an attempt past the sixth would arrive now
	perDelivery := map[string]int{}
	for _, r := range rc.got() {
		perDelivery[r.Header.Get(webhooks.HeaderDeliveryID)]++
	}
	for _, ev := range ids {
		id := e.deliveryID(ev, sub.ID)
		if n := perDelivery[id]; n != deliveries.MaxAttempts {
			t.Errorf("the receiver got delivery %s %d times, want exactly %d", id, n, deliveries.MaxAttempts)
		}
	}

	// What a client that follows the spec reads.
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID), e.token, nil)
	if code != http.StatusOK || out["data"].(map[string]any)["http_status_code"] != "500" {
		t.Errorf("GET subscription: %d %v, want http_status_code \"500\"", code, out["data"])
	}
	code, out = e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/deliveries"), e.token, nil)
	if code != http.StatusOK || len(out["data"].([]any)) != len(ids) {
		t.Fatalf("Recent Deliveries: %d %v", code, out)
	}
	for _, item := range out["data"].([]any) {
		d := item.(map[string]any)
		if d["status"] != deliveries.StatusFailed || d["attempt_count"] != float64(deliveries.MaxAttempts) || d["last_status_code"] != "500" {
			t.Errorf("Recent Deliveries item %v, want failed after 6 attempts, last status \"500\"", d)
		}
	}

	// The breaker's signals all the same: open, not holding, an incident.
	st, err := e.store.Breaker(t.Context(), sub.ID)
	if err != nil || !st.Open || st.Held || st.IncidentStartedAt == nil || st.Backlog != 0 {
		t.Errorf("breaker %+v (err %v), want open, not holding, an incident, nothing left pending", st, err)
	}
	// Its shard took every attempt: no lane of its own was started (a
	// workflow, and a workflow task per retry, for a receiver that fails
	// fast).
	if st.Route != deliveries.RouteShared {
		t.Errorf("route %q, want %q: an open breaker on retry moves nobody", st.Route, deliveries.RouteShared)
	}
	var notFound *serviceerror.NotFound
	if _, err := e.temporal.DescribeWorkflowExecution(t.Context(), workflows.LaneWorkflowID(sub.ID), ""); !errors.As(err, &notFound) {
		t.Errorf("describe the webhook's lane: %v, want not found (no lane started)", err)
	}
	t.Logf("%d deliveries to a receiver answering 500: each failed after %d attempts, all within %s",
		len(ids), deliveries.MaxAttempts, ended.Round(time.Millisecond))
}
