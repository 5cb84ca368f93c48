package ui_test

// End-to-end test in a real headless Chromium (Debian's chromium package,
// installed by scripts/install-chromium), driven with chromedp against the
// real API+UI, database, Temporal dev server, worker and a loopback receiver.
// Every page is saved as a PNG under testoutput/ui/<test>/ at the repository
// root. A missing browser fails the test: it never skips.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jobhooks/jobhooks"
)

func TestE2E_WebhookLifecycleAndKeyRotation(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	rc := newReceiver(t, http.StatusOK)
	b := newE2EBrowser(t, tu.URL)

	// Sign in.
	b.do("open sign-in", b.open("/ui"), chromedp.WaitVisible(chromedp.ID("token")))
	b.requireLabelledControls()
	b.screenshot("sign-in")
	b.do("sign in with a bad token",
		chromedp.SetValue(chromedp.ID("token"), "whu_wrong"),
		chromedp.Click(chromedp.CSS(`form[action="/ui/sign-in"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("token-error")),
	)
	b.screenshot("sign-in-refused")
	b.signIn(user.Token)
	b.requireText("main", "No webhooks yet", "Create New Webhook")
	b.screenshot("webhooks-empty")

	// Create New Webhook: first with mistakes, shown beside the fields.
	b.do("open the create form",
		chromedp.Click(chromedp.CSS(`main a.btn-primary`)),
		chromedp.WaitVisible(chromedp.ID("name")),
	)
	b.requireLabelledControls()
	b.screenshot("create-form")
	b.do("submit an invalid form",
		chromedp.SetValue(chromedp.ID("client_url"), rc.URL),
		chromedp.SetValue(chromedp.ID("job_ids"), "12, twelve"),
		chromedp.Click(chromedp.CSS(`form button[type=submit].btn-primary`)),
		chromedp.WaitVisible(chromedp.ID("job_ids-error")),
	)
	b.requireLabelledControls()
	b.screenshot("create-form-errors")
	b.do("fix and submit the form",
		chromedp.SetValue(chromedp.ID("name"), "Orders sync"),
		chromedp.SetValue(chromedp.ID("description"), "Tells the orders service when nightly runs finish."),
		chromedp.Click(chromedp.ID("event-1")),
		chromedp.Click(chromedp.ID("event-2")),
		chromedp.SetValue(chromedp.ID("job_ids"), "12, 34"),
		chromedp.Click(chromedp.CSS(`form button[type=submit].btn-primary`)),
		chromedp.WaitVisible(chromedp.ID("hmac-secret")),
		chromedp.WaitVisible(chromedp.CSS(`button[data-copy="hmac-secret"]`)), // JS unhid the copy button
	)
	secret := b.value("#hmac-secret")
	if len(secret) < 32 {
		t.Fatalf("secret %q looks wrong", secret)
	}
	b.requireText("main", "It will not be shown again")
	b.do("copy the secret",
		chromedp.Click(chromedp.CSS(`button[data-copy="hmac-secret"]`)),
		chromedp.WaitVisible(chromedp.Search(`//button[normalize-space()="Copied"]`)),
	)
	b.requireLabelledControls()
	b.screenshot("webhook-created-secret-once")

	// The detail page never shows the secret again.
	b.do("open the webhook",
		chromedp.Click(chromedp.Search(`//a[contains(., "open the webhook")]`)),
		chromedp.WaitVisible(chromedp.ID("deliveries-title")),
	)
	if strings.Contains(b.html(), secret) {
		t.Fatal("the secret is shown again on the webhook page")
	}
	b.screenshot("webhook-detail")

	// Test: the endpoint's answer, and a signed request at the receiver.
	b.do("send a test",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Test"]`)),
		chromedp.WaitVisible(chromedp.ID("test-title")),
	)
	b.requireText("main", "Your endpoint answered 200 OK", "Recent Deliveries", "job.run.completed", "succeeded")
	bodies, sigs := rc.received()
	if len(bodies) != 1 || sigs[0] != signature(secret, bodies[0]) {
		t.Fatalf("receiver: %d requests, signed with the shown secret: %v", len(bodies), len(sigs) == 1 && sigs[0] == signature(secret, bodies[0]))
	}
	b.screenshot("webhook-test-result")

	// The delivery in Recent Deliveries, its attempts and body; Retry.
	b.do("open the delivery",
		chromedp.Click(chromedp.CSS(`#deliveries-table tbody a[href*="/deliveries/wdl_"]`)),
		chromedp.WaitVisible(chromedp.ID("attempts-title")),
	)
	b.requireText("main", "receiver says 200", "webhooksID", "Body sent")
	b.screenshot("delivery-detail")
	rc.setStatus(http.StatusBadGateway)
	b.do("retry the delivery",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Retry"]`)),
		chromedp.WaitVisible(chromedp.ID("deliveries-title")),
	)
	b.requireText(".flash", "A new delivery of the same body was started")
	rows := 0
	for deadline := time.Now().Add(30 * time.Second); rows < 2 && time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		b.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("deliveries-title")))
		n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#deliveries-table tbody tr').length`))
		if err != nil {
			t.Fatal(err)
		}
		rows = n
	}
	if rows != 2 {
		t.Fatalf("Recent Deliveries shows %d rows after the retry, want 2", rows)
	}
	b.do("wait for the retry's attempt", chromedp.WaitVisible(chromedp.Search(`//td//span[contains(., "502")]`)))
	b.requireText("#deliveries-table", "retry", "502 Bad Gateway")
	b.screenshot("webhook-after-retry")

	// The webhook's health as a picture: bars per hour, drawn server side.
	b.do("reload for health", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("health-title")))
	bars, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.health-chart rect').length`))
	if err != nil || bars < 1 {
		t.Fatalf("health chart has %d bars (%v)", bars, err)
	}
	b.requireText("main", "Health, last 7 days", "Attempt time p50")
	b.screenshot("webhook-health")

	b.do("open the list", chromedp.Click(chromedp.CSS(`.sidebar a[aria-current="page"]`)), chromedp.WaitVisible(chromedp.CSS("main table")))
	b.requireText("main table", "Orders sync", "job.run.completed", "job.run.errored", "12, 34", "Active", "502")
	b.screenshot("webhooks-list")

	// Profile › API Access: rotate, new key once, old key refused.
	b.do("open API Access",
		chromedp.Click(chromedp.Search(`//nav//a[contains(., "API Access")]`)),
		chromedp.WaitVisible(chromedp.ID("key-title")),
	)
	if strings.Contains(b.html(), user.Token) {
		t.Fatal("API Access shows the key unmasked")
	}
	b.screenshot("api-access")
	b.do("ask to rotate",
		chromedp.Click(chromedp.Search(`//a[contains(., "Rotate key")]`)),
		chromedp.WaitVisible(chromedp.ID("confirm-title")),
	)
	b.screenshot("rotate-confirm")
	b.do("rotate",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Rotate key"]`)),
		chromedp.WaitVisible(chromedp.ID("new-key")),
	)
	newKey := b.value("#new-key")
	if !strings.HasPrefix(newKey, "whu_") || newKey == user.Token {
		t.Fatalf("new key %q", newKey)
	}
	b.requireLabelledControls()
	b.screenshot("api-key-rotated")

	if code := apiStatus(t, tu.URL, user.Token); code != http.StatusUnauthorized {
		t.Fatalf("old key: API answered %d, want 401", code)
	}
	if code := apiStatus(t, tu.URL, newKey); code != http.StatusOK {
		t.Fatalf("new key: API answered %d, want 200", code)
	}
	b.do("reload: the key is not shown again",
		b.open("/ui/profile/api-access"),
		chromedp.WaitVisible(chromedp.ID("key-title")),
		chromedp.WaitNotPresent(chromedp.ID("new-key")),
	)
	b.do("sign out",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign out"]`)),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	b.do("sign in with the old key",
		chromedp.SetValue(chromedp.ID("token"), user.Token),
		chromedp.Click(chromedp.CSS(`form[action="/ui/sign-in"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("token-error")),
	)
	b.requireText("#token-error", "not valid")
	b.screenshot("old-key-refused")
	b.signIn(newKey)
	b.requireText("main", "Orders sync")

	// The same pages on a phone-sized screen.
	b.do("narrow screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main table")))
	b.requireNoHorizontalScroll()
	b.screenshot("mobile-webhooks-list")
	b.do("open the webhook on a narrow screen",
		chromedp.Click(chromedp.CSS(`main table a`)),
		chromedp.WaitVisible(chromedp.ID("deliveries-title")),
	)
	b.requireNoHorizontalScroll()
	b.screenshot("mobile-webhook-detail")
}

func TestE2E_ReadOnlyUserSeesNoButtons(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	admin := tu.mustCreateUser(t, acct, "developer", "account_admin")
	reader := tu.mustCreateUser(t, acct, "read_only", "read_only")
	hb := tu.newBrowser(t)
	hb.mustSignIn(admin.Token)
	requireCode(t, hb.createWebhook(acct.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]

	b := newE2EBrowser(t, tu.URL)
	b.signIn(reader.Token)
	b.requireText("main", "Orders sync", "but not change them")
	if strings.Contains(b.html(), "Create New Webhook") {
		t.Fatal("a read-only user sees Create New Webhook")
	}
	b.screenshot("read-only-webhooks")
	b.do("open the webhook", b.open(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)), chromedp.WaitVisible(chromedp.ID("settings-title")))
	page := b.html()
	for _, button := range []string{">Edit<", "Deactivate", "Delete…"} {
		if strings.Contains(page, button) {
			t.Fatalf("a read-only user sees %q", button)
		}
	}
	b.screenshot("read-only-webhook")
	b.do("open the create form anyway", b.open(fmt.Sprintf("/ui/accounts/%d/webhooks/new", acct.ID)), chromedp.WaitVisible(chromedp.CSS(".error-card")))
	b.requireText(".error-card", "403", "Developer license")
	b.screenshot("read-only-refused")
}
