package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestShards_SpreadEventsShareRounds: events each to its own cold webhook
// are all delivered by the shards, in shared rounds: no workflow per
// webhook, and every record names a shard's run.
func TestShards_SpreadEventsShareRounds(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_SHARDS": "4"})
	rc := newReceiver(t, nil)
	const n = 40
	subs := make([]webhooks.Subscription, n)
	for i := range n {
		sub, secret := e.subscribe(rc.URL, allTypes, []int64{int64(1000 + i)}, true)
		if i == 0 {
			rc.setSecret(secret)
		}
		subs[i] = sub
	}
	events := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { events[i] = e.post(webhooks.EventRunCompleted, int64(1000+i), "") })
	}
	wg.Wait()
	runs := map[string]bool{}
	for i, id := range events {
		d := e.waitDelivery(id, subs[i].ID)
		if d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
			t.Fatalf("delivery to webhook %d: %s after %d attempts", i, d.Status, d.AttemptCount)
		}
		if want := e.shardOf(subs[i].ID); d.WorkflowID != want {
			t.Fatalf("delivery to webhook %d was made by %q, want its shard %q", i, d.WorkflowID, want)
		}
		runs[d.WorkflowRunID] = true
	}
	if len(runs) > 4 {
		t.Errorf("%d workflow runs made 40 deliveries, want at most the 4 shards' runs", len(runs))
	}
	if got := len(rc.got()); got != n {
		t.Errorf("receiver got %d requests, want %d", got, n)
	}
	resp, err := e.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "TaskQueue = '" + e.cfg.TemporalTaskQueue + "' AND WorkflowType = '" + workflows.LaneWorkflowName + "'"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Executions) != 0 {
		t.Errorf("%d webhook lanes ran for fast receivers, want none", len(resp.Executions))
	}
}

// TestShards_ReceiverThatStartsHangingMovesToItsOwnLane: one shard for
// everything; a receiver answers its first events at once and then hangs.
// The shared round hands its hanging attempt over after the patience and
// the webhook moves to its own lane, so the 20 other webhooks sharing the
// shard are all delivered while it still hangs. Released, it gets all its
// attempts from its own lane, which then goes idle and gives the webhook
// back to the shard.
func TestShards_ReceiverThatStartsHangingMovesToItsOwnLane(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_SHARDS": "1", "DELIVERY_SHARED_PATIENCE": "300ms", "DELIVERY_TIMEOUT": "20s",
		"DELIVERY_LANE_IDLE_TIMEOUT": "2s",
		// The breaker off: once open (its six attempts run out in its own
		// lane either way), the incident would keep the webhook on its
		// lane until announced (INCIDENT_NOTICE_AFTER), and this test
		// waits for the idle lane to give it back to its shard.
		"DELIVERY_BREAKER_THRESHOLD": "0",
	})
	release := make(chan struct{})
	var releaseOnce sync.Once
	hanging := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n > 3 {
			<-release
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	// After the receiver's: cleanups run last first, so a failing test
	// lets the hanging handler go before the receiver waits for it.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	slow, slowSecret := e.subscribe(hanging.URL, allTypes, []int64{1}, true)
	hanging.setSecret(slowSecret)
	var before []string
	for range 3 {
		before = append(before, e.post(webhooks.EventRunStarted, 1, ""))
	}
	for _, id := range before {
		if d := e.waitDelivery(id, slow.ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("before it hangs: %s", d.Status)
		}
	}

	healthy := newReceiver(t, nil)
	var others []webhooks.Subscription
	for i := range 20 {
		sub, secret := e.subscribe(healthy.URL, allTypes, []int64{int64(100 + i)}, true)
		healthy.setSecret(secret)
		others = append(others, sub)
	}
	stuck := e.post(webhooks.EventRunCompleted, 1, "") // its attempt hangs
	waitFor(t, func() bool { return len(hanging.got()) == 4 })
	var otherEvents []string
	for i := range others {
		otherEvents = append(otherEvents, e.post(webhooks.EventRunCompleted, int64(100+i), ""))
	}
	for i, id := range otherEvents {
		if d := e.waitDelivery(id, others[i].ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("webhook %d sharing the shard: %s", i, d.Status)
		}
	}
	if got := len(hanging.got()); got != 4 {
		t.Fatalf("the hanging receiver got %d requests, want its one hanging attempt after 3 answered", got)
	}
	// The others did not wait for the hanging attempt; its webhook moves
	// once the attempt has outlasted the patience.
	var route deliveries.WebhookRoute
	waitFor(t, func() bool {
		var err error
		route, err = e.store.Route(context.Background(), slow.ID)
		return err == nil && route.Route == deliveries.RouteOwn
	})
	if !strings.Contains(route.Reason, "longer than 300ms") {
		t.Fatalf("hanging webhook's route %+v, want its own lane, saying why", route)
	}

	releaseOnce.Do(func() { close(release) }) // it now fails fast: retries run in its own lane
	d := e.waitDelivery(stuck, slow.ID)
	if d.Status != deliveries.StatusFailed || d.AttemptCount != deliveries.MaxAttempts || len(d.Attempts) != deliveries.MaxAttempts {
		t.Fatalf("hanging webhook's delivery %s after %d attempts (%d recorded), want failed after 6", d.Status, d.AttemptCount, len(d.Attempts))
	}
	if d.WorkflowID != workflows.LaneWorkflowID(slow.ID) {
		t.Errorf("its last attempt was made by %q, want its own lane", d.WorkflowID)
	}
	waitFor(t, func() bool {
		r, err := e.store.Route(context.Background(), slow.ID)
		return err == nil && r.Route == deliveries.RouteShared
	})
}

// TestUpdates_PauseResumeAndRetryThroughTheSDK: the operator's Updates on
// the shard that owns a webhook, as the Temporal Web UI or `temporal
// workflow update execute` send them.
func TestUpdates_PauseResumeAndRetryThroughTheSDK(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_SHARDS": "2"})
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{1}, true)
	rc.setSecret(secret)
	shard := e.shardOf(sub.ID)
	first := e.post(webhooks.EventRunStarted, 1, "")
	delivered := e.waitDelivery(first, sub.ID)

	// Pause: new deliveries wait, durably, without attempts.
	res, err := e.update(shard, workflows.PauseWebhookUpdate, workflows.WebhookRequest{WebhookID: sub.ID, Reason: "receiver migration"})
	if err != nil || res["route"] != deliveries.RoutePaused || res["changed"] != true {
		t.Fatalf("pause: %v (err %v)", res, err)
	}
	// A webhook of the same shard, for jobs of its own: once its delivery
	// is made, the shard has had a round since the paused one's event.
	var probe webhooks.Subscription
	for i := 0; probe.ID == ""; i++ {
		if i == 50 {
			t.Fatal("no webhook fell in the same shard")
		}
		s, _ := e.subscribe(rc.URL, allTypes, []int64{int64(5000 + i)}, true)
		if e.shardOf(s.ID) == shard {
			probe = s
		}
	}
	held := e.post(webhooks.EventRunCompleted, 1, "")
	probeJob := probe.JobIDs[0]
	e.waitDelivery(e.post(webhooks.EventRunCompleted, probeJob, ""), probe.ID)
	if d := e.record(held, sub.ID); d.Status != deliveries.StatusPending || d.AttemptCount != 0 || len(rc.got()) != 2 {
		t.Fatalf("while paused: %s after %d attempts, receiver got %d", d.Status, d.AttemptCount, len(rc.got()))
	}
	// Resume: it goes.
	if res, err := e.update(shard, workflows.ResumeWebhookUpdate, workflows.WebhookRequest{WebhookID: sub.ID}); err != nil || res["route"] != deliveries.RouteShared {
		t.Fatalf("resume: %v (err %v)", res, err)
	}
	if d := e.waitDelivery(held, sub.ID); d.Status != deliveries.StatusSucceeded {
		t.Fatalf("after resume: %s", d.Status)
	}

	// Retry: a new delivery of the recorded body.
	res, err = e.update(shard, workflows.RetryDeliveryUpdate, workflows.RetryDeliveryRequest{WebhookID: sub.ID, DeliveryID: delivered.ID})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	newID, _ := res["delivery_id"].(string)
	if !webhooks.IsDeliveryID(newID) || res["retry_of"] != delivered.ID {
		t.Fatalf("retry result %v", res)
	}
	waitFor(t, func() bool { return len(rc.got()) == 4 })
	again := rc.got()[3]
	if again.Header.Get("Webhook-Delivery-Id") != newID || string(again.Body) != string(delivered.Payload) || !again.Signed {
		t.Errorf("retried delivery: id %q, same body %v, signed %v", again.Header.Get("Webhook-Delivery-Id"), string(again.Body) == string(delivered.Payload), again.Signed)
	}
	if d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, newID); err != nil || d.RedeliveryOf != delivered.ID || d.Status != deliveries.StatusSucceeded {
		t.Errorf("retried record: %+v (err %v)", d, err)
	}

	// Any shard takes any webhook's Update (which shard owns a webhook
	// follows its destination): another shard's webhook is paused and
	// resumed through this one. Refused: a delivery that is not the
	// webhook's (accepted, then failed).
	var other webhooks.Subscription
	for i := 0; other.ID == ""; i++ {
		if i == 50 {
			t.Fatal("no webhook fell in the other shard")
		}
		s, _ := e.subscribe(fmt.Sprintf("http://127.0.0.1:%d/other", 1024+i), allTypes, []int64{int64(9000 + i)}, true)
		if e.shardOf(s.ID) != shard {
			other = s
		}
	}
	for _, step := range []struct {
		update, route string
	}{{workflows.PauseWebhookUpdate, deliveries.RoutePaused}, {workflows.ResumeWebhookUpdate, deliveries.RouteShared}} {
		if _, err := e.update(shard, step.update, workflows.WebhookRequest{WebhookID: other.ID}); err != nil {
			t.Errorf("%s of another shard's webhook through this one: %v", step.update, err)
		}
		if r, err := e.store.Route(context.Background(), other.ID); err != nil || r.Route != step.route {
			t.Errorf("after %s the other webhook's route is %+v (err %v), want %s", step.update, r, err, step.route)
		}
	}
	if _, err := e.update(shard, workflows.RetryDeliveryUpdate, workflows.RetryDeliveryRequest{WebhookID: sub.ID, DeliveryID: webhooks.NewDeliveryID()}); err == nil || !strings.Contains(err.Error(), "is not one of") {
		t.Errorf("retry of an unknown delivery: %v, want refused", err)
	}
}

// TestRotateSecret_DeliveryRightAfterTheAnswerIsSignedWithTheNewSecret:
// deliver, rotate, deliver at once, repeated: every delivery whose event
// came after the rotation's answer carries Authorization by the new
// secret (attempts are signed with the secrets as of their claim).
func TestRotateSecret_DeliveryRightAfterTheAnswerIsSignedWithTheNewSecret(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	for i := range 5 {
		before := e.post(webhooks.EventRunStarted, 1, "")
		e.waitDelivery(before, sub.ID)
		code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/secret/rotate"), e.token, map[string]any{"expire_previous_in_seconds": 3600})
		if code != http.StatusOK {
			t.Fatalf("rotate %d: %d %v", i, code, out)
		}
		rc.setSecret(out["data"].(map[string]any)["hmac_secret"].(string))
		after := e.post(webhooks.EventRunCompleted, 1, "")
		d := e.waitDelivery(after, sub.ID)
		got := rc.got()
		last := got[len(got)-1]
		if last.Header.Get("Webhook-Delivery-Id") != d.ID || !last.Signed {
			t.Fatalf("trial %d: the delivery right after the rotation's answer is not signed with the new secret (Authorization %s)", i, fmt.Sprint(last.Header.Get("Authorization")))
		}
	}
}

// TestShards_FastAnswerIsRecordedWhileASlowOneInItsPageRuns: one event to
// two webhooks of one shard, claimed in one page; one receiver answers at
// once, the other holds its answer (within the patience). The fast
// delivery's record is written while the slow attempt still runs, not
// when the page ends: a worker that dies then does not send it again.
func TestShards_FastAnswerIsRecordedWhileASlowOneInItsPageRuns(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_SHARDS": "1", "DELIVERY_SHARED_PATIENCE": "8s", "DELIVERY_TIMEOUT": "20s",
	})
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	slowRC := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		select {
		case <-release:
		case <-time.After(6 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
	})
	fastRC := newReceiver(t, nil)
	slow, slowSecret := e.subscribe(slowRC.URL, allTypes, []int64{77}, true)
	slowRC.setSecret(slowSecret)
	fast, fastSecret := e.subscribe(fastRC.URL, allTypes, []int64{77}, true)
	fastRC.setSecret(fastSecret)

	event := e.post(webhooks.EventRunCompleted, 77, "")
	deadline := time.Now().Add(3 * time.Second)
	for e.record(event, fast.ID).Status != deliveries.StatusSucceeded {
		if time.Now().After(deadline) {
			t.Fatalf("the fast delivery is %q 3 s after the event while the slow one still runs (slow receiver got %d requests), want succeeded",
				e.record(event, fast.ID).Status, len(slowRC.got()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := len(slowRC.got()); got != 1 {
		t.Fatalf("slow receiver got %d requests, want its one attempt still running", got)
	}
	if s := e.record(event, slow.ID).Status; deliveries.IsFinal(s) {
		t.Fatalf("the slow delivery is already %q while its receiver holds the answer", s)
	}
	releaseOnce.Do(func() { close(release) })
	d := e.waitDelivery(event, slow.ID)
	f := e.record(event, fast.ID)
	if d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 || f.AttemptCount != 1 {
		t.Fatalf("slow %s after %d attempts, fast after %d: want each succeeded at its first", d.Status, d.AttemptCount, f.AttemptCount)
	}
	if d.WorkflowRunID != f.WorkflowRunID || len(d.Attempts) != 1 || len(f.Attempts) != 1 ||
		d.Attempts[0].StartedAt.Sub(f.Attempts[0].StartedAt).Abs() > time.Second {
		t.Errorf("the two deliveries were not attempted in one page: runs %s and %s", d.WorkflowRunID, f.WorkflowRunID)
	}
	if len(fastRC.got()) != 1 {
		t.Errorf("fast receiver got %d requests, want 1", len(fastRC.got()))
	}
}

// TestDeactivate_NoAttemptStartsAfterTheAnswer: three deliveries of one
// webhook are claimed in one page; the receiver holds the first answer, so
// the other two wait for the webhook's one slot. The webhook is
// deactivated meanwhile. Once the first answer comes, the waiting attempts
// find the state they were claimed with stale, read the webhook again and
// do not start: nothing arrives after the deactivation was answered, and
// they end skipped.
func TestDeactivate_NoAttemptStartsAfterTheAnswer(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_SHARDS": "1", "DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK": "1",
		"DELIVERY_SHARED_PATIENCE": "10s", "DELIVERY_TIMEOUT": "20s",
	})
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	var events []any
	for i := range 3 {
		events = append(events, map[string]any{"accountId": e.account.ID, "eventType": webhooks.EventRunCompleted,
			"eventId": fmt.Sprintf("fence-%d", i), "data": runData(5, webhooks.EventRunCompleted)})
	}
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events/batch", e.cfg.InternalAPIToken, map[string]any{"events": events})
	if code != http.StatusAccepted {
		t.Fatalf("batch: %d %v", code, out)
	}
	var ids []string
	for _, r := range out["data"].(map[string]any)["results"].([]any) {
		ids = append(ids, r.(map[string]any)["eventId"].(string))
	}
	waitFor(t, func() bool { return len(rc.got()) == 1 })
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+sub.ID), e.token, map[string]any{"active": false}); code != http.StatusOK {
		t.Fatalf("deactivate: %d %v", code, out)
	}
	answered := time.Now()
	releaseOnce.Do(func() { close(release) })
	statuses := map[string]int{}
	for _, id := range ids {
		statuses[e.waitDelivery(id, sub.ID).Status]++
	}
	for i, r := range rc.got() {
		if r.ArrivedAt.After(answered) && i > 0 {
			t.Errorf("request %d arrived %s after the deactivation was answered", i+1, r.ArrivedAt.Sub(answered))
		}
	}
	if got := len(rc.got()); got != 1 {
		t.Errorf("receiver got %d requests, want only the one in flight when the webhook was deactivated", got)
	}
	if statuses[deliveries.StatusSucceeded] != 1 || statuses[deliveries.StatusSkipped] != 2 {
		t.Errorf("deliveries ended %v, want 1 succeeded (the one in flight) and 2 skipped", statuses)
	}
}

// TestShards_AWebhookMovedToAnotherDestinationIsDeliveredByItsNewShard: a
// webhook's shard follows its destination (migration 00041). A delivery
// retrying at the old destination when the webhook's client_url moves to
// a destination of the other shard is the new shard's: the update wakes
// it, and the retry reaches the new receiver on its schedule, long before
// the sweeper would (its grace is ten minutes here).
func TestShards_AWebhookMovedToAnotherDestinationIsDeliveredByItsNewShard(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_SHARDS": "2", "DELIVERY_RETRY_INITIAL_INTERVAL": "2s", "DELIVERY_RETRY_MAX_INTERVAL": "2s", "DELIVERY_OVERDUE_GRACE": "10m",
	})
	failing := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	sub, secret := e.subscribe(failing.URL, allTypes, []int64{1}, true)
	var healthy *receiver
	for i := 0; healthy == nil; i++ { // a receiver whose destination is the other shard's
		if i == 50 {
			t.Fatal("no receiver fell in the other shard")
		}
		rc := newReceiver(t, nil)
		if deliveries.ShardOf(deliveries.LaneKey(deliveries.DestinationKey(e.account.ID, rc.URL), sub.ID), 2) != deliveries.ShardOf(e.laneKey(sub.ID), 2) {
			healthy = rc
		}
	}
	healthy.setSecret(secret)
	oldShard := e.shardOf(sub.ID)

	event := e.post(webhooks.EventRunCompleted, 1, "")
	waitFor(t, func() bool { return len(failing.got()) == 1 })
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+sub.ID), e.token, map[string]any{"client_url": healthy.URL}); code != http.StatusOK {
		t.Fatalf("move the webhook: %d %v", code, out)
	}
	if e.shardOf(sub.ID) == oldShard {
		t.Fatalf("the webhook stayed on %s", oldShard)
	}
	d := e.waitDelivery(event, sub.ID)
	if d.Status != deliveries.StatusSucceeded || d.AttemptCount != 2 || len(healthy.got()) != 1 || !healthy.got()[0].Signed {
		t.Fatalf("after the move: %s after %d attempts, the new receiver got %d", d.Status, d.AttemptCount, len(healthy.got()))
	}
	if d.WorkflowID != e.shardOf(sub.ID) {
		t.Errorf("the retry was made by %q, want the new shard %q", d.WorkflowID, e.shardOf(sub.ID))
	}
}
