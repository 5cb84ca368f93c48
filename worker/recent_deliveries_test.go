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
		name      string
		code      int
		wantCode  string
		wantError bool
	}{
		{name: "EndpointAnswers200", code: 200, wantCode: "200"},
		{name: "EndpointAnswers500", code: 500, wantCode: "500", wantError: true},
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
			if (data["verification_error"] != nil) != tt.wantError {
				t.Errorf("verification_error = %v", data["verification_error"])
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
			d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, data["delivery_id"].(string))
			if err != nil || !d.IsTest || d.AttemptCount != 1 {
				t.Errorf("test delivery record = %+v, %v", d, err)
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
	failedEv := e.ingest(webhooks.EventRunStarted, 3, "")
	e.waitDelivery(failedEv, sub.ID)
	okEv := e.ingest(webhooks.EventRunCompleted, 3, "")
	e.waitDelivery(okEv, sub.ID)
	base := accountPath(e, "/subscription/"+sub.ID+"/deliveries")

	code, out := e.call(http.MethodGet, base, e.token, nil)
	if code != 200 {
		t.Fatalf("list: %d %v", code, out)
	}
	list := out["data"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["event_id"] != okEv || list[1].(map[string]any)["status"] != "failed" {
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
	// The id the retry answered with can be looked up at once.
	if code, out := e.call(http.MethodGet, base+"/"+newID, e.token, nil); code != 200 {
		t.Errorf("GET the new delivery right after the retry: %d %v, want 200", code, out)
	}
	var redelivered deliveries.Delivery
	waitFor(t, func() bool {
		d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, newID)
		redelivered = d
		return err == nil && d.Status == deliveries.StatusSucceeded
	})
	if string(redelivered.Payload) != payload || redelivered.RedeliveryOf != failedID {
		t.Errorf("redelivery = %+v, want same payload, redelivery_of %s", redelivered, failedID)
	}
	if last := rc.got()[len(rc.got())-1]; string(last.Body) != payload {
		t.Errorf("redelivered body differs")
	}

	if code, _ := e.call(http.MethodGet, base+"/wdl_nope", e.token, nil); code != 404 {
		t.Errorf("unknown delivery: %d, want 404", code)
	}
}

func TestRecentDeliveries_InvisibleToOtherAccounts(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	ev := e.ingest(webhooks.EventRunStarted, 3, "")
	e.waitDelivery(ev, sub.ID)
	deliveryID := deliveries.DeliveryIDFor(deliveries.DeliveryWorkflowID(ev, sub.ID))

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
	tests := []struct {
		name, method, path, token string
		want                      int
	}{
		{"OtherAccountsTokenOnOurAccount", http.MethodGet, accountPath(e, own+"/deliveries"), otherToken, 403},
		{"OurWebhookUnderTheirAccount", http.MethodGet, "/api/v3/accounts/" + itoa(other.ID) + "/webhooks" + own + "/deliveries", otherToken, 404},
		{"OurDeliveryUnderTheirAccount", http.MethodGet, "/api/v3/accounts/" + itoa(other.ID) + "/webhooks" + own + "/deliveries/" + deliveryID, otherToken, 404},
		{"TestNeedsWrite", http.MethodGet, accountPath(e, own+"/test"), readOnly, 403},
		{"RetryNeedsWrite", http.MethodPost, accountPath(e, own+"/deliveries/"+deliveryID+"/retry"), readOnly, 403},
		{"ReadOnlyMayList", http.MethodGet, accountPath(e, own+"/deliveries"), readOnly, 200},
		{"NoToken", http.MethodGet, accountPath(e, own+"/deliveries"), "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, out := e.call(tt.method, tt.path, tt.token, nil); code != tt.want {
				t.Errorf("%s %s: %d %v, want %d", tt.method, tt.path, code, out, tt.want)
			}
		})
	}
}
