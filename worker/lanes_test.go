package worker_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"google.golang.org/protobuf/encoding/protojson"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
)

// TestIngest_GroupCommit: events of concurrent requests share one group
// commit (one statement), while a lone event on an idle API is stored at
// once, in a group of its own, without waiting for company.
func TestIngest_GroupCommit(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	lone := e.post(webhooks.EventRunStarted, 1, "")
	if g := e.groupSizes(); len(g) != 1 || g[0] != 1 {
		t.Fatalf("group commits %v, want one of 1 event", g)
	}
	e.waitDelivery(lone, sub.ID)

	// Concurrent requests: some group commit holds several of them (tried
	// a bounded number of times, as scheduling decides who overlaps).
	shared := false
	var ids []string
	for try := 0; try < 5 && !shared; try++ {
		before := len(e.groupSizes())
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 48 {
			wg.Go(func() {
				id := e.post(webhooks.EventRunCompleted, int64(i), "")
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, n := range e.groupSizes()[before:] {
			shared = shared || n > 1
		}
	}
	if !shared {
		t.Fatalf("no group commit held more than one event: %v", e.groupSizes())
	}
	for _, id := range ids {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
			t.Fatalf("delivery of %s: %s after %d attempts", id, d.Status, d.AttemptCount)
		}
	}
	if got := len(rc.got()); got != len(ids)+1 {
		t.Errorf("receiver got %d requests, want %d", got, len(ids)+1)
	}
}

// TestIngest_BatchEndpoint: a batch is stored together with a result per
// event; an invalid event is refused alone; an eventId repeated within the
// batch, in another batch and by concurrent single requests delivers once.
func TestIngest_BatchEndpoint(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	ev := func(callerID string) map[string]any {
		return map[string]any{"accountId": e.account.ID, "eventType": webhooks.EventRunCompleted,
			"eventId": callerID, "data": runData(5, webhooks.EventRunCompleted)}
	}
	bad := ev("bad")
	delete(bad["data"].(map[string]any), "runFinishedAt")
	events := []any{ev("a"), ev("b"), bad, ev("a"), ev("dup")}
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events/batch", e.cfg.InternalAPIToken, map[string]any{"events": events})
	if code != http.StatusAccepted {
		t.Fatalf("batch: %d %v", code, out)
	}
	results := out["data"].(map[string]any)["results"].([]any)
	if len(results) != len(events) {
		t.Fatalf("%d results for %d events", len(results), len(events))
	}
	get := func(i int) map[string]any { return results[i].(map[string]any) }
	if get(2)["error"].(map[string]any)["field"] != "data.runFinishedAt" || get(2)["eventId"] != nil {
		t.Errorf("invalid event's result = %v", get(2))
	}
	if get(0)["eventId"] != dispatch.EventIDFor(e.account.ID, "a") || get(0)["eventId"] != get(3)["eventId"] {
		t.Errorf("results 0 and 3 = %v, %v; want the same event id", get(0), get(3))
	}

	// The same eventId again: in a second batch and in concurrent single
	// requests.
	code, out = e.call(http.MethodPost, "/internal/v1/job-run-events/batch", e.cfg.InternalAPIToken, map[string]any{"events": []any{ev("dup")}})
	if code != http.StatusAccepted || out["data"].(map[string]any)["results"].([]any)[0].(map[string]any)["duplicate"] != true {
		t.Fatalf("second batch: %d %v", code, out)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { e.post(webhooks.EventRunCompleted, 5, "dup") })
	}
	wg.Wait()
	for _, caller := range []string{"a", "b", "dup"} {
		e.waitDelivery(dispatch.EventIDFor(e.account.ID, caller), sub.ID)
	}
	byEvent := map[string]int{}
	for _, r := range rc.got() {
		byEvent[r.Header.Get("Webhook-Event-Id")]++
	}
	if len(byEvent) != 3 {
		t.Errorf("receiver got events %v, want a, b and dup once each", byEvent)
	}
	for id, n := range byEvent {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
}

// TestLane_CapsAttemptsInFlightPerWebhook: however many deliveries are due,
// a webhook never has more than its cap of attempts in flight, and it gets
// that many.
func TestLane_CapsAttemptsInFlightPerWebhook(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK": "3"})
	var inFlight, most atomic.Int32
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		inFlight.Add(-1)
		w.WriteHeader(http.StatusNoContent)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	var ids []string
	for i := range 15 {
		ids = append(ids, e.post(webhooks.EventRunStarted, int64(i), ""))
	}
	for _, id := range ids {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("delivery of %s: %s", id, d.Status)
		}
	}
	if got := most.Load(); got != 3 {
		t.Errorf("at most %d attempts in flight, want the cap of 3", got)
	}
}

// TestIsolation_HungReceiverDoesNotDelayAnotherAccount is the A/B
// scenario: account A's receiver never answers (until the test lets it
// fail); account B, healthy, gets all its deliveries while every attempt
// to A is still hanging. A then still gets all six attempts of each
// delivery.
func TestIsolation_HungReceiverDoesNotDelayAnotherAccount(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK": "2",
		"WORKER_MAX_CONCURRENT_DELIVERIES":   "4",
		"DELIVERY_TIMEOUT":                   "20s",
	})
	release := make(chan struct{})
	var aHanging atomic.Int32
	hung := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		aHanging.Add(1)
		<-release
		w.WriteHeader(http.StatusInternalServerError)
	})
	aSubs := []webhooks.Subscription{}
	for range 3 { // 3 webhooks x cap 2 = more than A's share of the pool
		sub, secret := e.subscribe(hung.URL, allTypes, nil, true)
		hung.setSecret(secret)
		aSubs = append(aSubs, sub)
	}
	var aEvents []string
	for i := range 4 {
		aEvents = append(aEvents, e.post(webhooks.EventRunStarted, int64(i), ""))
	}
	waitFor(t, func() bool { return aHanging.Load() >= 2 }) // A holds its share of the pool

	b := e.newAccount()
	healthy := newReceiver(t, nil)
	bSub, bSecret := e.subscribeFor(b.ID, healthy.URL)
	healthy.setSecret(bSecret)
	var bEvents []string
	for i := range 5 {
		bEvents = append(bEvents, e.postFor(b.ID, webhooks.EventRunCompleted, int64(i), ""))
	}
	for _, id := range bEvents {
		if d := e.waitDeliveryOf(b.ID, id, bSub.ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("B's delivery %s: %s", id, d.Status)
		}
	}
	if n := len(hung.got()); n > 2 {
		t.Errorf("A had %d attempts in flight; its share of 4 slots is 2", n)
	}
	close(release) // A's receiver now fails fast: its retries run
	for _, sub := range aSubs {
		for _, id := range aEvents {
			d := e.waitDelivery(id, sub.ID)
			if d.Status != deliveries.StatusFailed || d.AttemptCount != deliveries.MaxAttempts || len(d.Attempts) != deliveries.MaxAttempts {
				t.Errorf("A's delivery %s to %s: %s after %d attempts (%d recorded), want failed after 6", id, sub.ID, d.Status, d.AttemptCount, len(d.Attempts))
			}
		}
	}
}

// TestRetries_RetryAfterLengthensTheSchedule: a receiver rate-limited for
// a while (429, Retry-After: 2) gets its wait: the retry comes no sooner
// than asked, though the backoff is 100ms, and the delivery succeeds.
func TestRetries_RetryAfterLengthensTheSchedule(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.post(webhooks.EventRunStarted, 1, "")
	d := e.waitDelivery(id, sub.ID)
	if d.Status != deliveries.StatusSucceeded || d.AttemptCount != 2 {
		t.Fatalf("delivery %s after %d attempts", d.Status, d.AttemptCount)
	}
	got := rc.got()
	if gap := got[1].ArrivedAt.Sub(got[0].ArrivedAt); gap < 2*time.Second {
		t.Errorf("retry came %s after the 429; Retry-After asked for 2s", gap)
	}
	if d.Attempts[0].StatusCode != http.StatusTooManyRequests || d.Attempts[1].StatusCode != http.StatusOK {
		t.Errorf("attempts %+v", d.Attempts)
	}
}

// TestRedelivery_GoesThroughTheLane: a redelivery of a recorded delivery
// sends the same bytes under a new delivery id.
func TestRedelivery_GoesThroughTheLane(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.ingest(webhooks.EventRunCompleted, 3, "", sub.ID)
	orig := e.record(id, sub.ID)
	newID, err := e.dispatch.Redeliver(context.Background(), e.account.ID, sub.ID, orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, newID)
		return err == nil && d.Status == deliveries.StatusSucceeded
	})
	got := rc.got()
	if len(got) != 2 || !bytes.Equal(got[0].Body, got[1].Body) || got[1].Header.Get("Webhook-Delivery-Id") != newID || !got[1].Signed {
		t.Fatalf("receiver got %d requests; the redelivery must carry the same body, signed, under id %s", len(got), newID)
	}
}

// TestDeliver_StandardWebhooksHeadersVerifyWithTheOfficialLibrary: real
// deliveries (an ingested event, with a retry, and a test delivery) carry
// webhook-id, webhook-timestamp and webhook-signature that the Standard
// Webhooks Go library verifies with the secret derived from hmac_secret,
// beside the spec's Authorization; webhook-id is the delivery id on every
// attempt.
func TestDeliver_StandardWebhooksHeadersVerifyWithTheOfficialLibrary(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.ingest(webhooks.EventRunCompleted, 7, "", sub.ID)
	if code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil); code != http.StatusOK {
		t.Fatalf("test endpoint: %d %v", code, out)
	}
	wh, err := standardwebhooks.NewWebhook(webhooks.StandardWebhooksSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	got := rc.got()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 2 attempts and a test", len(got))
	}
	for i, r := range got {
		if !r.Signed {
			t.Errorf("request %d: Authorization does not verify", i)
		}
		if err := wh.Verify(r.Body, r.Header); err != nil {
			t.Errorf("request %d: the Standard Webhooks library refuses it: %v", i, err)
		}
		if r.Header.Get("webhook-id") != r.Header.Get("Webhook-Delivery-Id") {
			t.Errorf("request %d: webhook-id %q, delivery id %q", i, r.Header.Get("webhook-id"), r.Header.Get("Webhook-Delivery-Id"))
		}
	}
	if want := e.deliveryID(id, sub.ID); got[0].Header.Get("webhook-id") != want || got[1].Header.Get("webhook-id") != want {
		t.Errorf("webhook-id of the two attempts: %q, %q; want %q on both", got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"), want)
	}
}

// TestRotateSecret_BothSignaturesUntilThePreviousExpires: after a rotation
// with a short overlap, a delivery verifies (Standard Webhooks library)
// with the new secret and with the previous one, and its Authorization is
// the new one's; once the previous secret has expired, only the new one
// verifies.
func TestRotateSecret_BothSignaturesUntilThePreviousExpires(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, old := e.subscribe(rc.URL, allTypes, nil, true)
	code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/secret/rotate"), e.token, map[string]any{"expire_previous_in_seconds": 6})
	if code != http.StatusOK {
		t.Fatalf("rotate: %d %v", code, out)
	}
	rotated := time.Now()
	secret := out["data"].(map[string]any)["hmac_secret"].(string)
	rc.setSecret(secret)
	verifies := func(r received, key string) bool {
		wh, err := standardwebhooks.NewWebhook(webhooks.StandardWebhooksSecret(key))
		if err != nil {
			t.Fatal(err)
		}
		return wh.Verify(r.Body, r.Header) == nil
	}

	e.ingest(webhooks.EventRunStarted, 1, "", sub.ID)
	during := rc.got()[0]
	if time.Since(rotated) >= 6*time.Second {
		t.Fatal("the delivery took longer than the 6 s overlap")
	}
	if !during.Signed || !verifies(during, secret) || !verifies(during, old) {
		t.Errorf("during the overlap: Authorization by the new secret %v, Standard signature by the new %v and the previous %v; want all",
			during.Signed, verifies(during, secret), verifies(during, old))
	}
	time.Sleep(time.Until(rotated.Add(6 * time.Second)))
	e.ingest(webhooks.EventRunCompleted, 1, "", sub.ID)
	after := rc.got()[1]
	if !after.Signed || !verifies(after, secret) || verifies(after, old) {
		t.Errorf("after the overlap: new secret signs %v/%v, previous still verifies %v", after.Signed, verifies(after, secret), verifies(after, old))
	}
	// Neither secret is in the shard's Temporal history, nor in plain text
	// in the database.
	h, err := protojson.Marshal(fetch(t, e.temporal, e.shardOf(sub.ID), ""))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT s::text FROM webhook_subscriptions s WHERE id = $1", sub.ID).Scan(&row); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{old, secret} {
		if strings.Contains(string(h), s) || strings.Contains(row, s) {
			t.Error("a secret is in the shard's history or in plain text in its row")
		}
	}
}

// TestRotateSecret_NoAttemptSignedWithAnExpiredSecret: a rotation that
// ends the previous secret at once (expire_previous_in_seconds 0) while a
// page of attempts is going out: no attempt that left after the previous
// secret expired carries it, and every attempt verifies with a secret
// valid when it left.
func TestRotateSecret_NoAttemptSignedWithAnExpiredSecret(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK": "1"})
	var rotate sync.Once
	rotated := make(chan time.Time, 1)
	var sub webhooks.Subscription
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {
		rotate.Do(func() {
			code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/secret/rotate"), e.token, map[string]any{"expire_previous_in_seconds": 0})
			if code != http.StatusOK {
				t.Errorf("rotate: %d %v", code, out)
			}
			rotated <- time.Now()
		})
		time.Sleep(700 * time.Millisecond)
	})
	sub, old := e.subscribe(rc.URL, allTypes, nil, true)
	var ids []string
	for i := range 6 {
		ids = append(ids, e.post(webhooks.EventRunStarted, int64(i), ""))
	}
	for _, id := range ids {
		e.waitDelivery(id, sub.ID)
	}
	at := <-rotated
	for i, r := range rc.got() {
		byOld := webhooks.VerifySignature(old, r.Body, r.Header.Get("Authorization"))
		if byOld && r.ArrivedAt.After(at.Add(2500*time.Millisecond)) {
			t.Errorf("request %d left %s after the rotation signed with the previous secret, which expired after 2 s", i, r.ArrivedAt.Sub(at))
		}
	}
	last := rc.got()[len(rc.got())-1]
	if webhooks.VerifySignature(old, last.Body, last.Header.Get("Authorization")) {
		t.Error("the last attempt, seconds after the rotation, is signed with the previous secret")
	}
}

// TestDeactivate_PendingDeliveriesAreSkippedAndCanBeSentLater: a webhook
// deactivated while a delivery waits for its retry stops: the delivery is
// recorded as skipped, not sent; after re-activation its redelivery sends
// the event's body.
func TestDeactivate_PendingDeliveriesAreSkippedAndCanBeSentLater(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_RETRY_INITIAL_INTERVAL": "3s", "DELIVERY_RETRY_MAX_INTERVAL": "3s"})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.post(webhooks.EventRunStarted, 1, "")
	waitFor(t, func() bool { return len(rc.got()) == 1 })
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+sub.ID), e.token, map[string]any{"active": false}); code != http.StatusOK {
		t.Fatalf("deactivate: %d %v", code, out)
	}
	d := e.waitDelivery(id, sub.ID)
	if d.Status != deliveries.StatusSkipped || d.AttemptCount != 1 || len(rc.got()) != 1 {
		t.Fatalf("after deactivation: %s after %d attempts, %d requests; want skipped after 1", d.Status, d.AttemptCount, len(rc.got()))
	}
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+sub.ID), e.token, map[string]any{"active": true}); code != http.StatusOK {
		t.Fatalf("activate: %d %v", code, out)
	}
	again, err := e.dispatch.Redeliver(context.Background(), e.account.ID, sub.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, again)
		return err == nil && r.Status == deliveries.StatusSucceeded
	})
	if got := rc.got(); len(got) != 2 || !bytes.Equal(got[0].Body, got[1].Body) {
		t.Errorf("receiver got %d requests; the redelivery must send the same body", len(got))
	}
}
