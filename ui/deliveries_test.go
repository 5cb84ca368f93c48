package ui_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/ui"
)

// receiver is a loopback webhook endpoint that answers with a status the
// test sets and records what it got.
type receiver struct {
	URL    string
	mu     sync.Mutex
	status int
	bodies [][]byte
	sigs   []string
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	rc := &receiver{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, body)
		rc.sigs = append(rc.sigs, r.Header.Get("Authorization"))
		code := rc.status
		rc.mu.Unlock()
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "receiver says %d", code)
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hook"
	return rc
}

func (rc *receiver) setStatus(code int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status = code
}

func (rc *receiver) received() ([][]byte, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([][]byte(nil), rc.bodies...), append([]string(nil), rc.sigs...)
}

// waitFor polls cond every 100ms for at most 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

var deliveryLinkPattern = regexp.MustCompile(`/deliveries/(wdl_[0-9a-f]{26})"`)

func TestDeliveries_TestRecentDeliveriesDetailRetry(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t), func(_ *testUI, d *ui.Deps) {
		d.TemporalWebUI, d.Namespace = "http://temporal-ui.example/", "default"
	})
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	rc := newReceiver(t, http.StatusOK)
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	created := b.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("client_url", rc.URL)
		return f
	})
	requireCode(t, created, http.StatusCreated)
	secret := secretPattern.FindStringSubmatch(created.Body)[1]
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	detail := b.get(path)
	requireContains(t, detail, "Recent Deliveries", "No deliveries yet", ">Test<")

	// Test: the endpoint's answer is shown, and the request was signed with
	// the secret the create page showed.
	sent := b.post(path+"/test", url.Values{"csrf_token": {csrfOf(t, detail)}})
	requireRedirect(t, sent, path+"?tested=wdl_")
	tested := b.get(sent.Location)
	requireCode(t, tested, http.StatusOK)
	requireContains(t, tested, "Your endpoint answered <strong>200 OK</strong>", "job.run.completed", "test")
	bodies, sigs := rc.received()
	if len(bodies) != 1 || sigs[0] != signature(secret, bodies[0]) {
		t.Fatalf("receiver got %d requests; signature ok = %v", len(bodies), len(sigs) == 1 && sigs[0] == signature(secret, bodies[0]))
	}
	m := deliveryLinkPattern.FindStringSubmatch(tested.Body)
	if m == nil {
		t.Fatalf("no delivery link on the page:\n%s", tested.Body)
	}
	deliveryID := m[1]

	// Recent Deliveries lists it with its status and last HTTP status.
	detail = b.get(path)
	requireContains(t, detail, deliveryID, "succeeded", "200 OK")
	requireNotContains(t, detail, "No deliveries yet")

	// The delivery page shows the attempt and the exact body sent.
	dp := b.get(path + "/deliveries/" + deliveryID)
	requireCode(t, dp, http.StatusOK)
	requireContains(t, dp, "Attempts", "receiver says 200", "Body sent", "webhooksID", sub.ID)
	// ... and links the workflow run that made the attempt in the Temporal
	// Web UI.
	requireContains(t, dp, `href="http://temporal-ui.example/namespaces/default/workflows/test%2F`+sub.ID+`%2F`+deliveryID+`/`)

	// Retry sends the same bytes again as a new delivery.
	rc.setStatus(http.StatusServiceUnavailable)
	requireRedirect(t, b.post(path+"/deliveries/"+deliveryID+"/retry", url.Values{"csrf_token": {csrfOf(t, dp)}}), path+"?done=retried")
	waitFor(t, "the retried delivery", func() bool {
		list, _, err := tu.Store.ListDeliveries(t.Context(), acct.ID, sub.ID, deliveries.ListFilter{Limit: 10})
		// Its attempt recorded, not only claimed (a claim counts it first).
		return err == nil && len(list) == 2 && list[0].LastStatusCode == http.StatusServiceUnavailable
	})
	bodies, _ = rc.received()
	if len(bodies) < 2 || string(bodies[1]) != string(bodies[0]) {
		t.Fatalf("retry did not resend the same body (%d requests)", len(bodies))
	}
	detail = b.get(path + "?done=retried")
	requireContains(t, detail, "A new delivery of the same body was started", "retry", "503 Service Unavailable")
}

func TestDeliveries_TestShowsFailure(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	rc := newReceiver(t, http.StatusInternalServerError)
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	f := validWebhookForm("")
	f.Set("client_url", rc.URL)
	requireCode(t, b.createWebhook(acct.ID, func(csrf string) url.Values { f.Set("csrf_token", csrf); return f }), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	sent := b.post(path+"/test", url.Values{"csrf_token": {csrfOf(t, b.get(path))}})
	requireRedirect(t, sent, path+"?tested=wdl_")
	tested := b.get(sent.Location)
	requireCode(t, tested, http.StatusOK)
	requireContains(t, tested, "The test delivery failed", "500 Internal Server Error")
	// Only this webhook's test deliveries are shown as test results.
	requireNotContains(t, b.get(path+"?tested=wdl_nosuchdelivery"), "Test delivery")
}

func TestDeliveries_ReadOnlyCannotTestOrRetry(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	admin := tu.mustCreateUser(t, acct, "developer", "account_admin")
	reader := tu.mustCreateUser(t, acct, "read_only", "read_only")
	rc := newReceiver(t, http.StatusOK)

	ab := tu.newBrowser(t)
	ab.mustSignIn(admin.Token)
	requireCode(t, ab.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("client_url", rc.URL)
		return f
	}), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	tested := ab.get(ab.post(path+"/test", url.Values{"csrf_token": {csrfOf(t, ab.get(path))}}).Location)
	deliveryID := deliveryLinkPattern.FindStringSubmatch(tested.Body)[1]

	b := tu.newBrowser(t)
	b.mustSignIn(reader.Token)
	detail := b.get(path)
	requireContains(t, detail, deliveryID)
	requireNotContains(t, detail, ">Test<", ">Retry<")
	dp := b.get(path + "/deliveries/" + deliveryID)
	requireCode(t, dp, http.StatusOK)
	requireNotContains(t, dp, ">Retry<")
	csrf := csrfOf(t, dp)
	requireCode(t, b.post(path+"/test", url.Values{"csrf_token": {csrf}}), http.StatusForbidden)
	requireCode(t, b.post(path+"/deliveries/"+deliveryID+"/retry", url.Values{"csrf_token": {csrf}}), http.StatusForbidden)
	if bodies, _ := rc.received(); len(bodies) != 1 {
		t.Fatalf("receiver got %d requests, want only the admin's test", len(bodies))
	}
	requireCode(t, b.get(path+"/deliveries/wdl_nosuchdelivery"), http.StatusNotFound)
	requireCode(t, b.get(path+"/deliveries/nonsense"), http.StatusNotFound)
}

func TestDeliveries_RecentDeliveriesPages(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Paged", ClientURL: "https://hooks.example.com/", EventTypes: []string{webhooks.EventRunStarted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// 12 recorded deliveries, run-1 oldest, each with one attempt: stored
	// as ingestion stores them, then recorded as a lane round records them.
	for i := 1; i <= 12; i++ {
		eventID := webhooks.NewID(webhooks.EventIDPrefix)
		_, lanes, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{
			ID: eventID, AccountID: acct.ID, Type: webhooks.EventRunStarted, JobID: "7",
			RunID: fmt.Sprintf("run-%d", i), Data: webhooks.RunData{JobID: "7"}, ToolName: "dbt",
		}})
		if err != nil || len(lanes) != 1 {
			t.Fatalf("ingest run-%d: %d lanes, %v", i, len(lanes), err)
		}
		rec := deliveries.AttemptRecord{
			SubscriptionID: sub.ID, DeliveryID: testenv.DeliveryID(t, tu.DB.Pool, eventID, sub.ID), AttemptNumber: 1, StartedAt: time.Now(),
			Duration: 42 * time.Millisecond, StatusCode: 200, Status: deliveries.StatusSucceeded, Body: deliveries.FixedBody{Payload: []byte(`{"n":1}`)},
		}
		if i == 5 || i == 11 { // two failures
			rec.StatusCode, rec.ErrorKind, rec.Status = 500, "http_status", deliveries.StatusFailed
		}
		if _, err := tu.Store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{rec}, deliveries.RecordPolicy{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct created_at, so "newest first" is well defined
	}
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	first := b.get(path)
	requireContains(t, first, "Deliveries 1–10 of 12", "Older →", "run-12", "run-3", "42 ms", "200 OK")
	requireNotContains(t, first, ">run-2<", "← Newer")
	second := b.get(path + "?deliveries=10")
	requireContains(t, second, "Deliveries 11–12 of 12", "← Newer", ">run-2<", ">run-1<")
	requireNotContains(t, second, "run-12", "Older →")
	requireContains(t, b.get(path+"?deliveries=50"), "No deliveries on this page")

	failed := b.get(path + "?status=failed")
	requireContains(t, failed, ">run-11<", ">run-5<", "500 Internal Server Error", `aria-current="true">Failed<`)
	requireNotContains(t, failed, ">run-12<", ">run-10<", "Older →")
	requireContains(t, b.get(path+"?status=cancelled"), "No cancelled deliveries")
	requireContains(t, b.get(path+"?status=bogus"), ">run-12<", `aria-current="true">All<`)
	requireCode(t, b.get(path+"?deliveries=-5"), http.StatusOK)
}

func TestDeliveries_TestWhileTemporalIsDownSaysSo(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	requireCode(t, b.createWebhook(acct.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	// Reading still works; Test explains, on the webhook page, that it could not run.
	detail := b.get(path)
	requireCode(t, detail, http.StatusOK)
	p := b.post(path+"/test", url.Values{"csrf_token": {csrfOf(t, detail)}})
	requireCode(t, p, http.StatusServiceUnavailable)
	requireContains(t, p, "The test delivery failed", "Recent Deliveries", "Settings")
}

// TestDeliveries_SlowEndpointWarningAndLateAnswers: the webhook page warns
// when the endpoint's recent attempts take over 7 s at the 95th
// percentile, not before; the delivery page shows an attempt's late answer.
func TestDeliveries_SlowEndpointWarningAndLateAnswers(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Slow", ClientURL: "https://hooks.example.com/", EventTypes: []string{webhooks.EventRunStarted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	record := func(d time.Duration, kind string) string {
		t.Helper()
		eventID := webhooks.NewID(webhooks.EventIDPrefix)
		if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: eventID, AccountID: acct.ID,
			Type: webhooks.EventRunStarted, JobID: "7", RunID: "1", Data: webhooks.RunData{JobID: "7"}, ToolName: "dbt"}}); err != nil {
			t.Fatal(err)
		}
		rec := deliveries.AttemptRecord{DeliveryID: testenv.DeliveryID(t, tu.DB.Pool, eventID, sub.ID), AttemptNumber: 1, StartedAt: time.Now(),
			Duration: d, StatusCode: 200, Status: deliveries.StatusSucceeded, Body: deliveries.FixedBody{Payload: []byte(`{}`)}}
		if kind != "" {
			rec.StatusCode, rec.ErrorKind, rec.ErrorMessage, rec.Status = 0, kind, "no complete response within 10s", deliveries.StatusRetrying
		}
		if _, err := tu.Store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{rec}, deliveries.RecordPolicy{}); err != nil {
			t.Fatal(err)
		}
		return rec.DeliveryID
	}
	for range 5 {
		record(6*time.Second, "")
	}
	requireNotContains(t, b.get(path), "This endpoint is slow")
	late := record(10*time.Second, "timeout")
	if ok, err := tu.Store.RecordLateAnswer(t.Context(), late, 1, 200, 12400*time.Millisecond); err != nil || !ok {
		t.Fatalf("record late answer: %v %v", ok, err)
	}
	for range 5 {
		record(9*time.Second, "")
	}
	requireContains(t, b.get(path), "This endpoint is slow: 95% of its recent attempts took up to 9.")
	requireContains(t, b.get(path+"/deliveries/"+late), "answered 200 after 12.4 s (late)")
}

// TestReplay_OfferCountsThenSendsMissedDeliveries: the webhook page offers
// to send what was missed; the confirmation gives the count first; sending
// replays them through the delivery engine.
func TestReplay_OfferCountsThenSendsMissedDeliveries(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	rc := newReceiver(t, http.StatusOK)
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	created := b.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("client_url", rc.URL)
		f.Set("active", "false") // events are skipped meanwhile
		return f
	})
	requireCode(t, created, http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	for i := range 3 {
		if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: webhooks.NewID(webhooks.EventIDPrefix),
			AccountID: acct.ID, Type: webhooks.EventRunCompleted, JobID: "12", RunID: fmt.Sprint(i),
			Data: webhooks.RunData{JobID: "12", RunID: fmt.Sprint(i)}, ToolName: "dbt"}}); err != nil {
			t.Fatal(err)
		}
	}
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	detail := b.get(path)
	requireNotContains(t, detail, "Send missed deliveries") // not while inactive
	requireCode(t, b.post(path+"/active", url.Values{"csrf_token": {csrfOf(t, detail)}, "active": {"true"}}), http.StatusSeeOther)
	requireContains(t, b.get(path), "3 deliveries of the last 7 days were skipped or failed", "Send missed deliveries")
	confirm := b.get(path + "/replay")
	requireContains(t, confirm, "<strong>3</strong> deliveries since", "Send 3 deliveries")
	if bodies, _ := rc.received(); len(bodies) != 0 {
		t.Fatal("something was sent before confirming")
	}
	sent := b.post(path+"/replay", url.Values{"csrf_token": {csrfOf(t, confirm)}})
	requireRedirect(t, sent, path+"?done=replaying")
	waitFor(t, "the 3 missed deliveries", func() bool { bodies, _ := rc.received(); return len(bodies) == 3 })
}
