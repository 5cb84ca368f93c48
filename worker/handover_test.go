package worker_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
)

// A delivery handed over for retries names its delivery workflow from the
// hand-over on (not only from its second attempt, which a Retry-After may
// put hours away), and keeps the receiver's Retry-After: an attempt found
// already recorded (the event workflow's task ran again after a worker
// crash) hands over with the same wait and POSTs nothing.
func TestDeliver_HandOverNamesTheDeliveryWorkflowAndKeepsRetryAfter(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	ev := e.ingest(webhooks.EventRunStarted, 21, "")
	deliveryWF := deliveries.DeliveryWorkflowID(ev, sub.ID)
	t.Cleanup(func() { _ = e.temporal.TerminateWorkflow(context.Background(), deliveryWF, "", "test over") })

	rec := e.record(ev, sub.ID)
	if rec.WorkflowID != deliveryWF || rec.Status != deliveries.StatusRetrying || rec.AttemptCount != 1 {
		t.Errorf("record after hand-over: workflow %q, status %s, %d attempts; want %q, retrying, 1",
			rec.WorkflowID, rec.Status, rec.AttemptCount, deliveryWF)
	}
	var delayMS int64
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT retry_delay_ms FROM webhook_deliveries WHERE id = $1`, rec.ID).Scan(&delayMS); err != nil {
		t.Fatal(err)
	}
	if delayMS != 120_000 {
		t.Errorf("recorded retry delay %d ms, want 120000 (the Retry-After)", delayMS)
	}

	// The event workflow's first attempt, run again.
	_, err := e.runActivity(func(a *activities.Activities) any { return a.AttemptDelivery }, deliveries.AttemptInput{
		DeliveryID: rec.ID, WorkflowID: deliveries.EventWorkflowID(ev), SubscriptionID: sub.ID, AccountID: e.account.ID,
		EventID: ev, EventType: webhooks.EventRunStarted, JobID: "21", Payload: rc.got()[0].Body,
		MaxAttempts: deliveries.MaxAttempts, AttemptTimeout: e.cfg.DeliveryTimeout, RetryAfterMax: e.cfg.DeliveryRetryAfterMax,
	})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != deliveries.ErrorTypeAttemptFailed {
		t.Fatalf("attempt again: %v, want the recorded failed attempt", err)
	}
	var res deliveries.AttemptResult
	if err := appErr.Details(&res); err != nil {
		t.Fatal(err)
	}
	if res.RetryDelay != 120*time.Second || res.Attempts != 1 || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("recorded outcome %+v, want attempt 1, 503, retry delay 2m", res)
	}
	if n := len(rc.got()); n != 1 {
		t.Errorf("receiver got %d requests, want 1: a recorded attempt is not POSTed again", n)
	}
}
