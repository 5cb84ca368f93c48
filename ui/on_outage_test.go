package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
)

// storedOnOutage is the on_outage stored for a webhook ("": none, the
// service's default).
func (tu *testUI) storedOnOutage(t *testing.T, id string) string {
	t.Helper()
	var v *string
	err := tu.DB.Pool.QueryRow(context.Background(), `SELECT on_outage FROM webhook_delivery_settings WHERE subscription_id = $1`, id).Scan(&v)
	if err != nil || v == nil {
		return ""
	}
	return *v
}

// TestDeliverySettingsPage_OnOutage: the settings page offers the
// service's default, keep retrying or hold deliveries; the choice is
// saved, shown checked, and a form without the field keeps it.
func TestDeliverySettingsPage_OnOutage(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "member")
	sub := tu.mustCreateWebhook(t, acct, "orders")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)

	form := b.get(path)
	requireContains(t, form, "When the endpoint is down", `id="on_outage_default" type="radio" name="on_outage" value="" checked`,
		"This service's default (keep retrying)", `id="on_outage_hold"`)

	f := headerForm(csrfOf(t, form), "")
	f.Set("on_outage", "hold")
	requireRedirect(t, b.post(path, f), path+"?done=saved")
	if got := tu.storedOnOutage(t, sub.ID); got != "hold" {
		t.Fatalf("stored on_outage %q, want hold", got)
	}
	saved := b.get(path)
	requireContains(t, saved, `id="on_outage_hold" type="radio" name="on_outage" value="hold" checked`)

	// A form without the field (an older page) keeps the choice.
	requireRedirect(t, b.post(path, headerForm(csrfOf(t, saved), "3")), path+"?done=saved")
	if got := tu.storedOnOutage(t, sub.ID); got != "hold" {
		t.Errorf("a form without on_outage changed it to %q", got)
	}
	bad := headerForm(csrfOf(t, saved), "")
	bad.Set("on_outage", "wait")
	p := b.post(path, bad)
	requireCode(t, p, http.StatusBadRequest)
	requireContains(t, p, "on_outage must be", "Nothing was saved")

	back := headerForm(csrfOf(t, saved), "")
	back.Set("on_outage", "")
	requireRedirect(t, b.post(path, back), path+"?done=saved")
	if got := tu.storedOnOutage(t, sub.ID); got != "" {
		t.Errorf("the default chosen, stored %q, want none", got)
	}
}

// TestWebhookPage_OpenBreakerThatRetries: a webhook whose breaker is open
// but keeps its deliveries on their schedule (on_outage retry) has a
// banner that says so, without a probe or Probe now, and the webhooks list
// marks it "Endpoint down", not "On hold".
func TestWebhookPage_OpenBreakerThatRetries(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t), withIncidents(t, &recordingWaker{}))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	writer := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub := tu.mustCreateSub(t, acct.ID, "Orders sync", "https://hooks.example.com/runs")
	if _, err := tu.DB.Pool.Exec(context.Background(), `UPDATE webhook_subscriptions SET delivery_route = 'own',
		breaker_opened_at = now() - interval '5 minutes', attempt_failures_in_a_row = 6, incident_started_at = now() - interval '5 minutes'
		WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	b := tu.newBrowser(t)
	b.mustSignIn(writer.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	p := b.get(path)
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, `id="breaker-banner"`, "The endpoint looks down", ">5 min ago</time>", "keep their retry schedule",
		`href="`+path+`/delivery-settings"`)
	requireNotContains(t, p, "Deliveries are on hold", "Probe now", "breaker-next-probe")
	list := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireContains(t, list, ">Endpoint down</span>")
	requireNotContains(t, list, "On hold: endpoint down")
}
