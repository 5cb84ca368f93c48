package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// An attempt costs one write: the record is created by the first recorded
// attempt (or by a cancellation when there was none), carries the
// delivery's fields, and once final is never changed by a late attempt.
func TestDeliveryRecord_WrittenByItsFirstOutcomeAndFinalAfterwards(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	sub, _ := e.subscribe("http://127.0.0.1:9/hook", allTypes, nil, true)
	input := func() deliveries.AttemptInput {
		return deliveries.AttemptInput{
			DeliveryID: webhooks.NewID(webhooks.DeliveryIDPrefix), WorkflowID: "event/" + webhooks.NewID(webhooks.EventIDPrefix),
			SubscriptionID: sub.ID, AccountID: e.account.ID, EventID: webhooks.NewID(webhooks.EventIDPrefix),
			EventType: webhooks.EventRunErrored, JobID: "8", RunID: "99", Payload: []byte(`{"exact":"bytes"}`),
		}
	}

	// Nothing is written before an outcome is known.
	in := input()
	target, err := e.store.LoadAttempt(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if target.DeliveryStatus != "pending" || target.AttemptsRecorded != 0 || target.ClientURL != sub.ClientURL {
		t.Errorf("target before any attempt = %+v", target)
	}
	if _, err := e.store.Delivery(ctx, e.account.ID, sub.ID, in.DeliveryID); webhooks.ErrorCode(err) != webhooks.ENOTFOUND {
		t.Fatalf("record after loading an attempt: %v, want not found (loading writes nothing)", err)
	}

	// The first attempt creates the record; a second one points it at the
	// workflow making it; a late attempt after the final one changes nothing.
	if err := e.store.RecordAttempt(ctx, in, deliveries.AttemptRecord{AttemptNumber: 1, StartedAt: time.Now(),
		StatusCode: 503, ErrorKind: "http_status", ErrorMessage: "busy", DeliveryStatus: deliveries.StatusRetrying, RetryDelay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	retry := in
	retry.WorkflowID = deliveries.DeliveryWorkflowID(in.EventID, sub.ID)
	if err := e.store.RecordAttempt(ctx, retry, deliveries.AttemptRecord{AttemptNumber: 2, StartedAt: time.Now(),
		StatusCode: 200, DeliveryStatus: deliveries.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RecordAttempt(ctx, in, deliveries.AttemptRecord{AttemptNumber: 3, StartedAt: time.Now(),
		StatusCode: 500, ErrorKind: "http_status", DeliveryStatus: deliveries.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	rec, err := e.store.Delivery(ctx, e.account.ID, sub.ID, in.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != deliveries.StatusSucceeded || rec.AttemptCount != 2 || rec.LastStatusCode != 200 ||
		rec.WorkflowID != retry.WorkflowID || string(rec.Payload) != `{"exact":"bytes"}` ||
		rec.EventType != webhooks.EventRunErrored || rec.RunID != "99" || rec.CompletedAt == nil {
		t.Errorf("record = status %s, %d attempts, last %d, workflow %q, payload %s, type %s, run %s; want succeeded, 2, 200, %q",
			rec.Status, rec.AttemptCount, rec.LastStatusCode, rec.WorkflowID, rec.Payload, rec.EventType, rec.RunID, retry.WorkflowID)
	}
	if len(rec.Attempts) != 3 || rec.Attempts[0].StatusCode != 503 || rec.Attempts[1].StatusCode != 200 {
		t.Errorf("attempts = %+v, want 503, 200 and the late 500 listed", rec.Attempts)
	}

	// A delivery cancelled before any attempt gets a record saying why.
	gone := input()
	if err := e.store.Cancel(ctx, gone, "the webhook was deactivated"); err != nil {
		t.Fatal(err)
	}
	c, err := e.store.Delivery(ctx, e.account.ID, sub.ID, gone.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != deliveries.StatusCancelled || c.LastError != "the webhook was deactivated" || c.AttemptCount != 0 || c.CompletedAt == nil {
		t.Errorf("cancelled record = %+v", c)
	}
}
