package worker_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDirectives_AbortAndDisable: a receiver that answers with
// Webhook-Delivery: abort stops that delivery after the one attempt
// (recorded failed, error kind aborted), other deliveries go on; one that
// answers Webhook-Delivery: disable deactivates the webhook: its pending
// deliveries end skipped, the account is told, and new events are
// recorded skipped without a request.
func TestDirectives_AbortAndDisable(t *testing.T) {
	e := newEnv(t, true, nil)
	sinkRC := newReceiver(t, nil)
	sink := e.setNotificationEndpoint(sinkRC.URL + "/notices")
	sink.receiver = sinkRC

	aborting := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set(webhooks.HeaderDirective, "Abort")
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(aborting.URL, allTypes, []int64{21}, true)
	aborting.setSecret(secret)
	first := e.ingest(webhooks.EventRunStarted, 21, "", sub.ID)
	d := e.record(first, sub.ID)
	if d.Status != deliveries.StatusFailed || d.AttemptCount != 1 || len(d.Attempts) != 1 ||
		d.Attempts[0].ErrorKind != deliveries.KindAborted || !strings.Contains(d.LastError, "Webhook-Delivery: abort") {
		t.Fatalf("aborted delivery: %s after %d attempts, last error %q (%+v)", d.Status, d.AttemptCount, d.LastError, d.Attempts)
	}
	if d := e.waitDelivery(e.post(webhooks.EventRunCompleted, 21, ""), sub.ID); d.Status != deliveries.StatusSucceeded {
		t.Errorf("the next delivery after an abort: %s, want it delivered", d.Status)
	}

	release := make(chan struct{})
	disabling := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release
			w.Header().Set(webhooks.HeaderDirective, "disable")
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	gone, goneSecret := e.subscribe(disabling.URL, allTypes, []int64{22}, true)
	disabling.setSecret(goneSecret)
	asked := e.post(webhooks.EventRunStarted, 22, "")
	waitFor(t, func() bool { return len(disabling.got()) == 1 })
	// Pending behind it (a run's completed waits for its started).
	pending := e.post(webhooks.EventRunCompleted, 22, "")
	close(release)
	if d := e.waitDelivery(asked, gone.ID); d.Status != deliveries.StatusFailed || d.Attempts[0].ErrorKind != deliveries.KindAborted {
		t.Errorf("the delivery answered disable: %s %+v", d.Status, d.Attempts)
	}
	if d := e.waitDelivery(pending, gone.ID); d.Status != deliveries.StatusSkipped {
		t.Errorf("a delivery pending when the receiver asked to disable: %s, want skipped", d.Status)
	}
	got, err := e.subs.Get(t.Context(), e.account.ID, gone.ID)
	if err != nil || got.Active {
		t.Fatalf("webhook after disable: active %v (err %v), want deactivated", got.Active, err)
	}
	if d := e.waitDelivery(e.post(webhooks.EventRunCompleted, 22, ""), gone.ID); d.Status != deliveries.StatusSkipped {
		t.Errorf("an event after the disable: %s, want skipped", d.Status)
	}
	if n := len(disabling.got()); n != 1 {
		t.Errorf("the receiver got %d requests, want only the one it answered with disable", n)
	}
	waitFor(t, func() bool { return len(sinkRC.got()) == 1 })
	time.Sleep(500 * time.Millisecond)
	notices := sink.notices(t)
	if len(notices) != 1 || notices[0].Type != webhooks.NoticeDisabled || notices[0].Webhook.ID != gone.ID {
		t.Errorf("notices %+v, want one webhook.disabled for %s", notices, gone.ID)
	}
}
