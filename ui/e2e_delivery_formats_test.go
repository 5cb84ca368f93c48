package ui_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	webhooks "github.com/jobhooks/jobhooks"
)

// TestE2E_DeliveryFormats: on the delivery settings page in headless
// Chromium: a filter that does not compile shown beside its field, a
// check of a filter against the account's latest events, PagerDuty saved
// with its routing key (masked from then on), and the page on a phone.
func TestE2E_DeliveryFormats(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub := tu.mustCreateWebhook(t, acct, "prod-alerts")
	start := time.Now().Add(-time.Hour).UTC()
	for i, env := range []string{"Prod", "Staging", "Prod", "Dev", "Staging", "Prod"} {
		tu.mustStoreEvent(t, acct, fmt.Sprintf("wev_e2e%d", i), webhooks.EventRunErrored, fmt.Sprint(40+i), env, start.Add(time.Duration(i)*time.Minute))
	}

	b := newE2EBrowser(t, tu.URL)
	b.signIn(user.Token)
	b.do("open the delivery settings",
		b.open(fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)),
		chromedp.WaitVisible(chromedp.ID("format-title")),
	)
	b.requireLabelledControls()

	b.do("check a filter that does not compile",
		chromedp.SetValue(chromedp.ID("filter"), `data.environment == "Prod"`),
		chromedp.Click(chromedp.ID("filter-check-button")),
		chromedp.WaitVisible(chromedp.ID("filter-error")),
	)
	b.requireText("#filter-error", "undeclared reference", "data.environmentName")
	b.requireLabelledControls()
	b.screenshot("delivery-formats-filter-refused")

	b.do("check a filter against the latest events",
		chromedp.SetValue(chromedp.ID("filter"), `data.environmentName == "Prod"`),
		chromedp.Click(chromedp.ID("filter-check-button")),
		chromedp.WaitVisible(chromedp.ID("filter-check-table")),
	)
	b.requireText("#filter-check", "The filter matches 3 of the account's latest 6 events", "job 45", "job 40")
	if got := b.value("#filter"); got != `data.environmentName == "Prod"` {
		t.Errorf("the checked filter is not kept in the form: %q", got)
	}
	b.screenshot("delivery-formats-filter-check")

	const key = "R0UTINGKEYe2e0123456789abcdefABC"
	b.do("save PagerDuty with its routing key",
		chromedp.Click(chromedp.ID("format_pagerduty")),
		chromedp.SetValue(chromedp.ID("pagerduty_routing_key"), key),
		chromedp.Click(chromedp.CSS(`#format-form button.btn-primary`)),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	b.requireText(".flash", "The format, notifications and filter were saved")
	if strings.Contains(b.html(), key) {
		t.Fatal("the routing key is shown after saving")
	}
	if o := tu.openedSettings(t, sub.ID); o.Format != "pagerduty" || o.PagerDutyRoutingKey != key {
		t.Fatalf("stored = %q %q", o.Format, o.PagerDutyRoutingKey)
	}
	b.requireText("#routing-key-help", "a key is stored")
	b.screenshot("delivery-formats-pagerduty")

	b.do("narrow screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.SetValue(chromedp.ID("filter"), `data.environmentName == "Prod"`),
		chromedp.Click(chromedp.ID("filter-check-button")),
		chromedp.WaitVisible(chromedp.ID("filter-check-table")),
	)
	b.requireNoHorizontalScroll()
	b.screenshot("mobile-delivery-formats")
}
