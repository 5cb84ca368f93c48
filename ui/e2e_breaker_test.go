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
	"github.com/jobhooks/jobhooks/incidents"
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
	if _, err := incidents.NewStore(tu.DB.Pool).CreateNotice(t.Context(), incidents.Notice{
		ID: webhooks.NewID(webhooks.NoticeIDPrefix), AccountID: acct.ID, SubscriptionID: sub.ID,
		Kind: webhooks.NoticeBreakerOpened, IncidentStartedAt: time.Now().Add(-5 * time.Minute), Payload: []byte(`{}`),
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
	// The page is read until the banner has gone and the drained deliveries'
	// records show (they are written just after the receiver answers).
	for deadline := time.Now().Add(30 * time.Second); ; {
		banner := strings.Contains(b.html(), `id="breaker-banner"`)
		if !banner && strings.Contains(b.text("#deliveries-table"), "succeeded") {
			break
		}
		if time.Now().After(deadline) {
			if banner {
				b.screenshot("failed-banner-stays")
				t.Fatal("the banner stays after the endpoint answered the probe")
			}
			break // requireText below says what the table shows
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

// TestE2E_HeldDeliveriesSayHeld: under the breaker's banner, Recent
// Deliveries says which deliveries are held and when the next probe goes,
// rather than promising them an attempt that will not go; a delivery the
// open breaker does not hold (a webhook that retries through an outage)
// still shows its next attempt. The status column keeps to two lines (the
// badge, then the wait) on a wide and on a phone-sized screen.
func TestE2E_HeldDeliveriesSayHeld(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t), withIncidents(t, &recordingWaker{}))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub := tu.mustCreateSub(t, acct.ID, "Orders sync", "https://hooks.example.com/orders")
	ids := map[string]string{}
	for _, run := range []string{"run-held-1", "run-held-2", "run-retrying"} {
		ids[run] = tu.recordRetrying(t, acct.ID, sub.ID, run, 22*time.Minute)
	}
	tu.openBreaker(t, sub.ID, 1, "10 minutes")
	tu.hold(t, ids["run-held-1"], ids["run-held-2"])

	b := newE2EBrowser(t, tu.URL)
	b.signIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	b.do("open the webhook", b.open(path), chromedp.WaitVisible(chromedp.ID("deliveries-table")))
	b.requireText("#breaker-banner", "Deliveries are on hold")
	for _, run := range []string{"run-held-1", "run-held-2"} {
		b.requireStatus(run, "held", "next probe in 10 min")
	}
	b.requireStatus("run-retrying", "retrying", "next attempt in 22 min")
	if table := b.text("#deliveries-table"); strings.Count(table, "next attempt") != 1 {
		b.screenshot("failed-held-promised-an-attempt")
		t.Fatalf("Recent Deliveries promises %d next attempts, want only the delivery that is not held's:\n%s",
			strings.Count(table, "next attempt"), table)
	}
	b.requireStatusCellLines(2)
	b.screenshot("held-deliveries")

	b.do("narrow screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("deliveries-table")))
	b.requireNoHorizontalScroll()
	b.requireStatusCellLines(2)
	b.screenshot("mobile-held-deliveries")
	b.do("wide screen", chromedp.EmulateViewport(1280, 860), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("deliveries-table")))

	b.do("open a held delivery", b.open(path+"/deliveries/"+ids["run-held-1"]), chromedp.WaitVisible(chromedp.CSS("main h1")))
	b.requireText("main", "Held", "next probe")
	if main := b.text("main"); strings.Contains(main, "Next attempt") {
		t.Fatalf("a held delivery's page promises a next attempt:\n%s", main)
	}
	b.screenshot("held-delivery")
}

// statusOf is the text of the status column in the Recent Deliveries row
// of run ("" when no row shows run).
func (b *e2eBrowser) statusOf(run string) string {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`[...document.querySelectorAll("#deliveries-table tbody tr")]
		.filter(r => r.cells[1].innerText.trim() === %q).map(r => r.cells[2].innerText).join(" | ")`, run)))
	if err != nil {
		b.t.Fatal(err)
	}
	return got
}

func (b *e2eBrowser) requireStatus(run string, wants ...string) {
	b.t.Helper()
	got := b.statusOf(run)
	for _, w := range wants {
		if !strings.Contains(got, w) {
			b.screenshot("failed-status")
			b.t.Fatalf("the status of %s says %q, want it to say %q", run, got, w)
		}
	}
}

// requireStatusCellLines fails when a status cell of Recent Deliveries
// takes more than max lines of text.
func (b *e2eBrowser) requireStatusCellLines(max int) {
	b.t.Helper()
	// A line of text is a run of text boxes whose heights overlap.
	lines, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`Math.max(0, ...[...document.querySelectorAll("#deliveries-table tbody tr")].map(r => {
		const boxes = [];
		const walk = document.createTreeWalker(r.cells[2], NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			const range = document.createRange();
			range.selectNodeContents(n);
			boxes.push(...[...range.getClientRects()].filter(x => x.height > 0 && x.width > 0));
		}
		boxes.sort((a, b) => a.top - b.top);
		let lines = 0, bottom = -Infinity;
		for (const x of boxes) {
			if (x.top >= bottom - 1) { lines++; bottom = x.bottom; } else { bottom = Math.max(bottom, x.bottom); }
		}
		return lines;
	}))`))
	if err != nil {
		b.t.Fatal(err)
	}
	if lines > max {
		b.screenshot("failed-status-wraps")
		b.t.Fatalf("a status cell of Recent Deliveries takes %d lines, want at most %d", lines, max)
	}
}
