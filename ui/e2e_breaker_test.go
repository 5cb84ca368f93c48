package ui_test

// End-to-end in headless Chromium: a webhook whose endpoint breaker is
// open, over the real engine. Screenshots go to testoutput/ui/<test>/.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestE2E_BreakerBannerAndProbeNow: the webhooks list marks a webhook whose
// breaker is open and lists the account's notice; its page shows the
// banner (since when, next probe, deliveries waiting, failed probes), also
// on a phone-sized screen; Probe now sends the held deliveries to the
// endpoint, which is back, at once (the next step was an hour away), and
// the banner goes; the notification endpoint page sets a URL and shows its
// secret once.
func TestE2E_BreakerBannerAndProbeNow(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t), withIncidents(t, nil))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	rc := newReceiver(t, http.StatusOK)
	sub := tu.mustCreateSub(t, acct.ID, "Orders sync", rc.URL)
	tu.mustCreateSub(t, acct.ID, "Billing", newReceiver(t, http.StatusOK).URL)
	tu.openBreaker(t, sub.ID, 2, "1 hour")
	tu.ingest(t, acct.ID, 3)
	if _, err := deliveries.NewStore(tu.DB.Pool).CreateNotice(t.Context(), deliveries.Notice{
		ID: webhooks.NewID(activities.NoticeIDPrefix), AccountID: acct.ID, SubscriptionID: sub.ID,
		Kind: activities.NoticeBreakerOpened, IncidentStartedAt: time.Now().Add(-5 * time.Minute), Payload: []byte(`{}`),
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := rc.received(); len(got) != 0 {
		t.Fatalf("the receiver got %d deliveries while the breaker was open", len(got))
	}

	b := newE2EBrowser(t, tu.URL)
	b.signIn(user.Token)
	b.requireText("main", "Orders sync", "On hold: endpoint down", "Notices, last 7 days", "Deliveries on hold")
	b.screenshot("webhooks-list-breaker-open")

	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	b.do("open the webhook", b.open(path), chromedp.WaitVisible(chromedp.ID("breaker-banner")))
	b.requireText("#breaker-banner", "Deliveries are on hold", "5 min ago", "in 60 min", "Probe now")
	b.requireText("#breaker-backlog", "3")
	b.requireText("#breaker-failed-probes", "2")
	b.screenshot("webhook-breaker-open")

	b.do("narrow screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("breaker-banner")))
	b.requireNoHorizontalScroll()
	b.screenshot("mobile-webhook-breaker-open")
	b.do("wide screen", chromedp.EmulateViewport(1280, 860), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("breaker-banner")))

	b.do("probe now",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Probe now"]`)),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	b.requireText(".flash", "The probe goes now")
	b.screenshot("webhook-probe-asked")
	waitFor(t, "the held deliveries at the receiver", func() bool { got, _ := rc.received(); return len(got) == 3 })
	for deadline := time.Now().Add(30 * time.Second); strings.Contains(b.html(), `id="breaker-banner"`); {
		if time.Now().After(deadline) {
			b.screenshot("failed-banner-stays")
			t.Fatal("the banner stays after the endpoint answered the probe")
		}
		time.Sleep(300 * time.Millisecond)
		b.do("reload", b.open(path), chromedp.WaitVisible(chromedp.ID("deliveries-title")))
	}
	b.requireText("#deliveries-table", "succeeded")
	b.screenshot("webhook-breaker-closed")

	// The notification endpoint: set, secret shown once.
	notices := newReceiver(t, http.StatusNoContent)
	b.do("open the notification endpoint page",
		b.open(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID)),
		chromedp.Click(chromedp.Search(`//a[normalize-space()="Notification endpoint"]`)),
		chromedp.WaitVisible(chromedp.ID("url")),
	)
	b.requireLabelledControls()
	b.screenshot("notification-endpoint-none")
	b.do("set the endpoint",
		chromedp.SetValue(chromedp.ID("url"), notices.URL),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Save"]`)),
		chromedp.WaitVisible(chromedp.ID("notification-secret")),
	)
	if secret := b.value("#notification-secret"); len(secret) < 32 {
		t.Fatalf("secret %q looks wrong", secret)
	}
	b.requireText("main", "It will not be shown again")
	b.requireLabelledControls()
	b.screenshot("notification-endpoint-secret-once")
}
