package worker_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
)

// TestAutoDisable_HealthSkippedAndBack: a receiver that keeps failing gets
// its webhook deactivated automatically once every delivery failed for the
// configured time with enough of them in a row; the health endpoint says
// when and why and counts what happened; events while it is inactive are
// recorded as skipped; activating it clears the state, and a success
// resets the streak.
func TestAutoDisable_HealthSkippedAndBack(t *testing.T) {
	e := newEnv(t, true, map[string]string{
		"DELIVERY_AUTO_DISABLE_AFTER": "1s", "DELIVERY_AUTO_DISABLE_MIN_FAILURES": "3",
		"DELIVERY_RETRY_INITIAL_INTERVAL": "10ms", "DELIVERY_RETRY_MAX_INTERVAL": "10ms",
	})
	var healthy atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusGone) // fails at once, for good
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	health := func() map[string]any {
		t.Helper()
		code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/health"), e.token, nil)
		if code != http.StatusOK {
			t.Fatalf("health: %d %v", code, out)
		}
		return out["data"].(map[string]any)
	}
	// Two failed deliveries: failing, not disabled (fewer than 3).
	for i := range 2 {
		e.ingest(webhooks.EventRunStarted, int64(i), "", sub.ID)
	}
	h := health()
	if h["disabled_automatically"] != false || h["failed_deliveries_in_a_row"] != float64(2) || h["failing_since"] == nil || h["active"] != true {
		t.Fatalf("after 2 failures: %v", h)
	}
	// More, once the period is over: disabled.
	for {
		e.ingest(webhooks.EventRunStarted, 3, "", sub.ID)
		if h = health(); h["disabled_automatically"] == true {
			break
		}
		if h["failed_deliveries_in_a_row"].(float64) > 20 {
			t.Fatalf("never disabled: %v", h)
		}
	}
	if h["active"] != false || h["disabled_at"] == nil || h["disabled_reason"] == nil || h["last_failure_at"] == nil ||
		h["deliveries"].(map[string]any)["failed"].(map[string]any)["last_24h"].(float64) < 3 ||
		h["attempts"].(map[string]any)["http_status"].(map[string]any)["last_7d"].(float64) < 3 {
		t.Fatalf("after disabling: %v", h)
	}
	// The spec's object shows it inactive; events now are skipped.
	if code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID), e.token, nil); code != http.StatusOK || out["data"].(map[string]any)["active"] != false {
		t.Fatalf("subscription after disabling: %d %v", code, out)
	}
	sent := len(rc.got())
	missed := e.post(webhooks.EventRunCompleted, 9, "")
	if d := e.waitDelivery(missed, sub.ID); d.Status != deliveries.StatusSkipped || len(rc.got()) != sent {
		t.Fatalf("event while disabled: %s, %d new requests", d.Status, len(rc.got())-sent)
	}
	if h = health(); h["skipped_while_inactive_7d"] != float64(1) {
		t.Errorf("skipped count = %v, want 1", h["skipped_while_inactive_7d"])
	}
	// Activating clears the state; a success then keeps the streak at 0.
	if code, out := e.call(http.MethodPut, accountPath(e, "/subscription/"+sub.ID), e.token, map[string]any{"active": true}); code != http.StatusOK {
		t.Fatalf("activate: %d %v", code, out)
	}
	healthy.Store(true)
	e.ingest(webhooks.EventRunStarted, 10, "", sub.ID)
	h = health()
	if h["active"] != true || h["disabled_automatically"] != false || h["disabled_reason"] != nil || h["failed_deliveries_in_a_row"] != float64(0) ||
		h["failing_since"] != nil || h["last_success_at"] == nil || h["success_rate_7d"] == nil {
		t.Errorf("after activating and a success: %v", h)
	}
	// Another account's credentials cannot read it.
	other := e.newAccount()
	_, token, err := identity.NewStore(e.db.Pool).CreateUser(context.Background(), identity.NewUser{AccountID: other.ID,
		Email: webhooks.NewID("u") + "@example.com", License: "developer", PermissionSets: []string{"account_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/health"), token, nil); code != http.StatusForbidden {
		t.Errorf("another account's health read: %d, want 403", code)
	}
}
