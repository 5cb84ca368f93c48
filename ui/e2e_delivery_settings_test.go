package ui_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testcerts"
)

// TestE2E_DeliverySettings: from the webhook page to its delivery settings
// in headless Chromium: a refused header shown beside its row, a rate and
// headers saved (the secret masked from then on), a client certificate
// uploaded and removed, and the page on a phone.
func TestE2E_DeliverySettings(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub := tu.mustCreateWebhook(t, acct, "orders-sync")
	ca := testcerts.NewCA(t, "Acme Client CA")
	certPEM, keyPEM := ca.Issue(t, testcerts.Leaf{CommonName: "orders-sync.acme.example"})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}

	b := newE2EBrowser(t, tu.URL)
	b.signIn(user.Token)
	b.do("open the webhook", b.open(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)), chromedp.WaitVisible(chromedp.ID("settings-title")))
	b.do("open its delivery settings",
		chromedp.Click(chromedp.ID("delivery-settings-link")),
		chromedp.WaitVisible(chromedp.ID("sending-title")),
	)
	b.requireLabelledControls()
	b.requireText("main", "Delivery settings", "No client certificate")
	b.screenshot("delivery-settings-empty")

	b.do("try a header the service sets",
		chromedp.SetValue(chromedp.ID("header_name_0"), "Authorization"),
		chromedp.SetValue(chromedp.ID("header_value_0"), "Bearer mine"),
		chromedp.Click(chromedp.CSS(`form[action$="/delivery-settings"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("header_name_0-error")),
	)
	b.requireText("#header_name_0-error", `"Authorization" cannot be configured`)
	b.requireLabelledControls()
	b.screenshot("delivery-settings-refused-header")

	const secret = "sk_live_browser-9f31"
	b.do("save a rate and two headers",
		chromedp.SetValue(chromedp.ID("max_requests_per_second"), "5"),
		chromedp.SetValue(chromedp.ID("header_name_0"), "X-Team"),
		chromedp.SetValue(chromedp.ID("header_value_0"), "data platform"),
		chromedp.SetValue(chromedp.ID("header_name_1"), "X-Api-Key"),
		chromedp.SetValue(chromedp.ID("header_value_1"), secret),
		chromedp.Click(chromedp.ID("header_secret_1")),
		chromedp.Click(chromedp.CSS(`form[action$="/delivery-settings"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	b.requireText(".flash", "Your changes were saved")
	if strings.Contains(b.html(), secret) {
		t.Fatal("the secret header's value is shown after saving")
	}
	if got := b.value("#header_value_0"); got != "data platform" {
		t.Errorf("X-Team's value = %q", got)
	}
	if o := tu.openedSettings(t, sub.ID); len(o.Headers) != 2 || o.Headers[1].Value != secret || *o.MaxRequestsPerSecond != 5 {
		t.Fatalf("stored = %+v", o)
	}
	b.screenshot("delivery-settings-saved")

	b.do("upload a client certificate",
		chromedp.SetUploadFiles(chromedp.ID("certificate"), []string{certFile}),
		chromedp.SetUploadFiles(chromedp.ID("private_key"), []string{keyFile}),
		chromedp.Click(chromedp.CSS(`form[action$="/certificate"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("certificate-details")),
	)
	b.requireText("#certificate-details", "CN=orders-sync.acme.example", "CN=Acme Client CA")
	if strings.Contains(b.html(), "PRIVATE KEY") {
		t.Fatal("the private key is shown")
	}
	b.requireLabelledControls()
	b.screenshot("delivery-settings-certificate")

	// The same page on a phone-sized screen.
	b.do("narrow screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("sending-title")))
	b.requireNoHorizontalScroll()
	b.screenshot("mobile-delivery-settings")

	b.do("remove the certificate",
		chromedp.Click(chromedp.CSS(`form[action$="/certificate/remove"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("no-certificate")),
	)
	b.requireText(".flash", "The client certificate was removed")
	if o := tu.openedSettings(t, sub.ID); o.Certificate != nil || len(o.Headers) != 2 {
		t.Fatalf("after removal: %+v", o)
	}
	b.screenshot("mobile-delivery-settings-certificate-removed")
}
