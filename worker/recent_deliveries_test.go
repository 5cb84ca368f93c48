package worker_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
)

func TestTestEndpoint_SendsOneSignedTestDelivery(t *testing.T) {
	e := newEnv(t, true, nil)
	tests := []struct {
		name       string
		code       int
		wantCode   string
		wantError  bool
		wantStatus string
	}{
		{name: "EndpointAnswers200", code: 200, wantCode: "200", wantStatus: deliveries.StatusSucceeded},
		{name: "EndpointAnswers500", code: 500, wantCode: "500", wantError: true, wantStatus: deliveries.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, status(tt.code))
			sub, secret := e.subscribe(rc.URL, []string{webhooks.EventRunErrored}, []int64{999}, true)
			rc.setSecret(secret)
			code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil)
			if code != 200 {
				t.Fatalf("test endpoint: %d %v", code, out)
			}
			data := out["data"].(map[string]any)
			if data["verification_status_code"] != tt.wantCode {
				t.Errorf("verification_status_code = %v, want %s", data["verification_status_code"], tt.wantCode)
			}
			if v, ok := data["verification_error"]; !ok || (v != nil) != tt.wantError {
				t.Errorf("verification_error = %v (present %v), want an error: %v", v, ok, tt.wantError)
			}
			if out["status"].(map[string]any)["code"] != float64(200) {
				t.Errorf("status = %v", out["status"])
			}
			got := rc.got()
			if len(got) != 1 || !got[0].Signed {
				t.Fatalf("receiver got %d requests (signed: %v), want 1 signed", len(got), len(got) == 1 && got[0].Signed)
			}
			if et := mustJSON(t, got[0].Body)["eventType"]; et != webhooks.EventRunErrored {
				t.Errorf("test event type = %v", et)
			}
			if h := got[0].Header.Get(webhooks.HeaderAttempt); h != "1" {
				t.Errorf("%s = %q, want 1", webhooks.HeaderAttempt, h)
			}
			// A test is a dispatch: the webhook's latest status is its answer.
			if after, err := e.subs.Get(context.Background(), e.account.ID, sub.ID); err != nil || after.HTTPStatusCode != tt.code || after.DispatchedAt == nil {
				t.Errorf("webhook http_status_code %d dispatched_at %v (err %v), want %d", after.HTTPStatusCode, after.DispatchedAt, err, tt.code)
			}
			// The test endpoint answered after its attempt was recorded.
			list, total, err := e.store.ListDeliveries(context.Background(), e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
			if err != nil || total != 1 {
				t.Fatalf("%d delivery records (%v), want the test's one", total, err)
			}
			d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, list[0].ID)
			if err != nil || !d.IsTest || d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Status != tt.wantStatus ||
				string(d.Payload) != string(got[0].Body) || got[0].Header.Get(webhooks.HeaderDeliveryID) != d.ID {
				t.Errorf("test delivery record = %+v, %v; want is_test, 1 attempt, %s, the body and id sent", d, err, tt.wantStatus)
			}
		})
	}
}

func TestRecentDeliveries_ListGetRetry(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(410)
			return
		}
		w.WriteHeader(200)
	})
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	failedEv := e.ingest(webhooks.EventRunStarted, 3, "", sub.ID)
	okEv := e.ingest(webhooks.EventRunCompleted, 3, "", sub.ID)
	base := accountPath(e, "/subscription/"+sub.ID+"/deliveries")

	code, out := e.call(http.MethodGet, base, e.token, nil)
	if code != 200 {
		t.Fatalf("list: %d %v", code, out)
	}
	list := out["data"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["event_id"] != okEv || list[1].(map[string]any)["status"] != "failed" ||
		list[1].(map[string]any)["event_id"] != failedEv {
		t.Fatalf("list (newest first) = %v", list)
	}
	if tc := out["extra"].(map[string]any)["pagination"].(map[string]any)["total_count"]; tc != float64(2) {
		t.Errorf("total_count = %v", tc)
	}
	code, out = e.call(http.MethodGet, base+"?status=failed&limit=1", e.token, nil)
	if code != 200 || len(out["data"].([]any)) != 1 {
		t.Errorf("filter by status: %d %v", code, out)
	}
	for _, bad := range []string{"?status=lost", "?limit=0", "?offset=-1"} {
		if code, out := e.call(http.MethodGet, base+bad, e.token, nil); code != 400 {
			t.Errorf("%s: %d %v, want 400", bad, code, out)
		}
	}

	failedID := list[1].(map[string]any)["id"].(string)
	if want := e.deliveryID(failedEv, sub.ID); failedID != want {
		t.Errorf("failed delivery id %s, want %s", failedID, want)
	}
	code, out = e.call(http.MethodGet, base+"/"+failedID, e.token, nil)
	if code != 200 {
		t.Fatalf("get: %d %v", code, out)
	}
	detail := out["data"].(map[string]any)
	attempts := detail["attempts"].([]any)
	if len(attempts) != 1 || attempts[0].(map[string]any)["status_code"] != "410" {
		t.Errorf("attempts = %v", attempts)
	}
	payload := detail["payload"].(string)
	if string(rc.got()[0].Body) != payload {
		t.Errorf("recorded payload differs from the body sent")
	}

	code, out = e.call(http.MethodPost, base+"/"+failedID+"/retry", e.token, nil)
	if code != 202 {
		t.Fatalf("retry: %d %v", code, out)
	}
	newID := out["data"].(map[string]any)["id"].(string)
	if newID == failedID {
		t.Fatalf("the redelivery reuses the original's id %s", newID)
	}
	// The id the retry answered with can be looked up at once.
	if code, out := e.call(http.MethodGet, base+"/"+newID, e.token, nil); code != 200 {
		t.Errorf("GET the new delivery right after the retry: %d %v, want 200", code, out)
	}
	var redelivered deliveries.Delivery
	waitFor(t, func() bool {
		d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, newID)
		redelivered = d
		return err == nil && deliveries.IsFinal(d.Status)
	})
	if redelivered.Status != deliveries.StatusSucceeded || string(redelivered.Payload) != payload ||
		redelivered.RedeliveryOf != failedID || redelivered.AttemptCount != 1 {
		t.Errorf("redelivery = %+v, want succeeded at once, same payload, redelivery_of %s", redelivered, failedID)
	}
	got := rc.got()
	if len(got) != 3 {
		t.Errorf("receiver got %d requests, want 3 (two events, one redelivery)", len(got))
	}
	last := got[len(got)-1]
	if string(last.Body) != payload {
		t.Errorf("redelivered body differs")
	}
	if h := last.Header.Get(webhooks.HeaderDeliveryID); h != newID {
		t.Errorf("redelivery sent with %s %q, want its own id %s", webhooks.HeaderDeliveryID, h, newID)
	}
	if orig := e.record(failedEv, sub.ID); orig.Status != deliveries.StatusFailed || orig.AttemptCount != 1 {
		t.Errorf("original after redelivery: %s after %d attempts, want failed after 1", orig.Status, orig.AttemptCount)
	}

	if code, _ := e.call(http.MethodGet, base+"/wdl_nope", e.token, nil); code != 404 {
		t.Errorf("unknown delivery: %d, want 404", code)
	}
	if code, _ := e.call(http.MethodPost, base+"/wdl_nope/retry", e.token, nil); code != 404 {
		t.Errorf("retry of an unknown delivery: %d, want 404", code)
	}
}

func TestRecentDeliveries_InvisibleToOtherAccounts(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	ev := e.ingest(webhooks.EventRunStarted, 3, "", sub.ID)
	deliveryID := e.deliveryID(ev, sub.ID)

	ids := identity.NewStore(e.db.Pool)
	other, err := ids.CreateAccount(context.Background(), "Other", webhooks.PlanEnterprise)
	if err != nil {
		t.Fatal(err)
	}
	_, otherToken, err := ids.CreateUser(context.Background(), identity.NewUser{AccountID: other.ID, Email: "other@example.com", License: "developer", PermissionSets: []string{"account_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	_, readOnly, err := ids.CreateServiceToken(context.Background(), e.account.ID, "ro", []string{"read_only"})
	if err != nil {
		t.Fatal(err)
	}
	own := "/subscription/" + sub.ID
	theirs := "/api/v3/accounts/" + itoa(other.ID) + "/webhooks" + own
	tests := []struct {
		name, method, path, token string
		want                      int
	}{
		{"OtherAccountsTokenOnOurAccount", http.MethodGet, accountPath(e, own+"/deliveries"), otherToken, 403},
		{"OurWebhookUnderTheirAccount", http.MethodGet, theirs + "/deliveries", otherToken, 404},
		{"OurDeliveryUnderTheirAccount", http.MethodGet, theirs + "/deliveries/" + deliveryID, otherToken, 404},
		{"RetryOurDeliveryUnderTheirAccount", http.MethodPost, theirs + "/deliveries/" + deliveryID + "/retry", otherToken, 404},
		{"TestOurWebhookUnderTheirAccount", http.MethodGet, theirs + "/test", otherToken, 404},
		{"TestNeedsWrite", http.MethodGet, accountPath(e, own+"/test"), readOnly, 403},
		{"RetryNeedsWrite", http.MethodPost, accountPath(e, own+"/deliveries/"+deliveryID+"/retry"), readOnly, 403},
		{"ReadOnlyMayList", http.MethodGet, accountPath(e, own+"/deliveries"), readOnly, 200},
		{"ReadOnlyMayGet", http.MethodGet, accountPath(e, own+"/deliveries/"+deliveryID), readOnly, 200},
		{"NoToken", http.MethodGet, accountPath(e, own+"/deliveries"), "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, out := e.call(tt.method, tt.path, tt.token, nil); code != tt.want {
				t.Errorf("%s %s: %d %v, want %d", tt.method, tt.path, code, out, tt.want)
			}
		})
	}
	// Nothing the refused requests asked for happened.
	if n := len(rc.got()); n != 1 {
		t.Errorf("receiver got %d requests, want only the event's", n)
	}
	if _, total, err := e.store.ListDeliveries(context.Background(), e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10}); err != nil || total != 1 {
		t.Errorf("%d delivery records (%v), want 1", total, err)
	}
}
