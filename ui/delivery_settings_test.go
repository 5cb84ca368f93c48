package ui_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// mustCreateWebhook creates a webhook of acct in the store.
func (tu *testUI) mustCreateWebhook(t *testing.T, acct webhooks.Account, name string) webhooks.Subscription {
	t.Helper()
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: name, ClientURL: "https://hooks.example.com/" + name, EventTypes: webhooks.EventTypes, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// openedSettings returns the settings of id as the sender sees them.
func (tu *testUI) openedSettings(t *testing.T, id string) webhooksettings.Sending {
	t.Helper()
	got, err := webhooksettings.NewStore(tu.DB.Pool, tu.Box).ForSending(t.Context(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	return got[id]
}

// postFiles posts a multipart form of fields and files (name -> content).
func (b *browser) postFiles(path string, fields, files map[string]string) page {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	for k, v := range files {
		f, _ := w.CreateFormFile(k, k+".pem")
		_, _ = f.Write([]byte(v))
	}
	_ = w.Close()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return b.do(req)
}

// headerForm is the settings form with rows of name, value, secret.
func headerForm(csrf, rate string, rows ...[3]string) url.Values {
	f := url.Values{"csrf_token": {csrf}, "max_requests_per_second": {rate}, "header_rows": {fmt.Sprint(len(rows))}}
	for i, r := range rows {
		f.Set(fmt.Sprintf("header_name_%d", i), r[0])
		f.Set(fmt.Sprintf("header_value_%d", i), r[1])
		if r[2] == "secret" {
			f.Set(fmt.Sprintf("header_secret_%d", i), "true")
		}
	}
	return f
}

const uiSecretValue = "sk_live_ui-secret-4471"

func TestDeliverySettingsPage_RateAndHeaders(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "member")
	sub := tu.mustCreateWebhook(t, acct, "orders")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)

	detail := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID))
	requireCode(t, detail, http.StatusOK)
	requireContains(t, detail, `href="`+path+`"`)
	form := b.get(path)
	requireCode(t, form, http.StatusOK)
	requireContains(t, form, "Rate limit, headers and outages", "No client certificate", `name="header_name_2"`, `name="header_rows" value="3"`)

	saved := b.post(path, headerForm(csrfOf(t, form), "2.5", [3]string{"X-Team", "data"}, [3]string{"X-Api-Key", uiSecretValue, "secret"}))
	requireRedirect(t, saved, path+"?done=saved")
	got := b.get(saved.Location)
	requireContains(t, got, "Your changes were saved", `value="X-Team"`, `value="data"`, `value="X-Api-Key"`, "•••••••• (unchanged)", `value="2.5"`,
		`name="header_rows" value="5"`) // the two headers and three empty rows
	requireNotContains(t, got, uiSecretValue)
	opened := tu.openedSettings(t, sub.ID)
	if len(opened.Headers) != 2 || opened.Headers[1].Value != uiSecretValue || *opened.MaxRequestsPerSecond != 2.5 {
		t.Fatalf("stored = %+v", opened)
	}

	// Saving with the secret's value left empty keeps it; Remove drops a
	// header; an empty rate is no limit.
	f := headerForm(csrfOf(t, got), "", [3]string{"X-Team", "data"}, [3]string{"X-Api-Key", "", "secret"})
	f.Set("header_remove_0", "true")
	requireRedirect(t, b.post(path, f), path+"?done=saved")
	opened = tu.openedSettings(t, sub.ID)
	if len(opened.Headers) != 1 || opened.Headers[0].Name != "X-Api-Key" || opened.Headers[0].Value != uiSecretValue || opened.MaxRequestsPerSecond != nil {
		t.Fatalf("after keeping the secret: %+v", opened)
	}

	t.Run("ErrorsBesideTheirFields", func(t *testing.T) {
		p := b.post(path, headerForm(csrfOf(t, got), "fast", [3]string{"X-Ok", "1"}, [3]string{"Authorization", "Bearer x"}, [3]string{"X-Bad", "a\r\nb"}))
		requireCode(t, p, http.StatusBadRequest)
		requireContains(t, p, `id="max_requests_per_second"`, `id="rate-error"`, `id="header_name_1-error"`,
			"Header &#34;Authorization&#34; cannot be configured", `id="header_value_2-error"`, "control characters", "Nothing was saved")
		if o := tu.openedSettings(t, sub.ID); len(o.Headers) != 1 || o.Headers[0].Name != "X-Api-Key" {
			t.Errorf("a refused form changed the settings: %+v", o)
		}
		p = b.post(path, headerForm(csrfOf(t, got), "0", [3]string{"X-New-Secret", "typed secret", "secret"}))
		requireCode(t, p, http.StatusBadRequest)
		requireContains(t, p, "max_requests_per_second must be more than 0")
		requireNotContains(t, p, "typed secret") // not sent back to the browser
	})
	t.Run("NoCSRFIsRefused", func(t *testing.T) {
		f := headerForm("", "", [3]string{"X-Forged", "1"})
		requireCode(t, b.post(path, f), http.StatusForbidden)
	})
}

func TestDeliverySettingsPage_ClientCertificate(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "member")
	sub := tu.mustCreateWebhook(t, acct, "mtls")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)
	ca := testcerts.NewCA(t, "UI CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "ui client"})
	_, otherKey := ca.Issue(t, testcerts.Leaf{CommonName: "other"})
	csrf := csrfOf(t, b.get(path))

	refused := b.postFiles(path+"/certificate", map[string]string{"csrf_token": csrf}, map[string]string{"certificate": cert, "private_key": otherKey})
	requireCode(t, refused, http.StatusBadRequest)
	requireContains(t, refused, `id="private_key-error"`, "does not match")
	missing := b.postFiles(path+"/certificate", map[string]string{"csrf_token": csrf}, map[string]string{"certificate": cert})
	requireCode(t, missing, http.StatusBadRequest)
	requireContains(t, missing, `id="private_key-error"`, "Choose the file")
	if tu.openedSettings(t, sub.ID).Certificate != nil {
		t.Fatal("a refused upload stored a certificate")
	}

	requireRedirect(t, b.postFiles(path+"/certificate", map[string]string{"csrf_token": csrf}, map[string]string{"certificate": cert, "private_key": key}), path+"?done=certificate")
	got := b.get(path + "?done=certificate")
	requireContains(t, got, "The client certificate was saved", "CN=ui client", "CN=UI CA", "Remove certificate", "Replace it")
	requireNotContains(t, got, "PRIVATE KEY", strings.Split(key, "\n")[1])
	if c := tu.openedSettings(t, sub.ID).Certificate; c == nil || c.KeyPEM != key {
		t.Fatalf("stored certificate = %+v", c)
	}
	// Saving rate and headers keeps the certificate.
	requireRedirect(t, b.post(path, headerForm(csrf, "1", [3]string{"X-A", "1"})), path+"?done=saved")
	if tu.openedSettings(t, sub.ID).Certificate == nil {
		t.Fatal("saving the headers dropped the certificate")
	}
	requireRedirect(t, b.post(path+"/certificate/remove", url.Values{"csrf_token": {csrf}}), path+"?done=removed")
	requireContains(t, b.get(path+"?done=removed"), "The client certificate was removed", "No client certificate")
	if o := tu.openedSettings(t, sub.ID); o.Certificate != nil || len(o.Headers) != 1 {
		t.Fatalf("after removal: %+v", o)
	}
}

// TestDeliverySettingsPage_Access: a reader sees the settings (secrets
// masked) without forms, and is refused any change; another account's
// webhook is not found, like a missing one.
func TestDeliverySettingsPage_Access(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	sub := tu.mustCreateWebhook(t, acct, "read-me")
	v := uiSecretValue
	if _, err := webhooksettings.NewStore(tu.DB.Pool, tu.Box).Update(t.Context(), acct.ID, sub.ID, webhooksettings.Update{
		Rate:    &webhooksettings.Rate{MaxRequestsPerSecond: func() *float64 { r := 4.0; return &r }()},
		Headers: &[]webhooksettings.HeaderInput{{Name: "X-Api-Key", Value: &v, Secret: true}},
	}, time.Now()); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)

	reader := tu.newBrowser(t)
	reader.mustSignIn(tu.mustCreateUser(t, acct, "read_only", "read_only").Token)
	p := reader.get(path)
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, "You can view these settings but not change them", "X-Api-Key", "••••••••", "No client certificate")
	// No form that changes the settings; checking the filter changes nothing.
	requireNotContains(t, p, uiSecretValue, `action="`+path+`"`, `action="`+path+`/certificate`, `action="`+path+`/format"`)
	// The reader's page has a CSRF token only in the sign-out form.
	csrf := csrfOf(t, p)
	for _, post := range []string{path, path + "/certificate/remove"} {
		requireCode(t, reader.post(post, headerForm(csrf, "", [3]string{"X-Reader", "1"})), http.StatusForbidden)
	}
	if o := tu.openedSettings(t, sub.ID); len(o.Headers) != 1 || *o.MaxRequestsPerSecond != 4 {
		t.Errorf("a reader changed the settings: %+v", o)
	}

	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	theirs := tu.mustCreateWebhook(t, other, "theirs")
	writer := tu.newBrowser(t)
	writer.mustSignIn(tu.mustCreateUser(t, acct, "developer", "member").Token)
	for _, id := range []string{theirs.ID, webhooks.NewID(webhooks.SubscriptionIDPrefix)} {
		p := writer.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, id))
		requireCode(t, p, http.StatusNotFound)
		requireContains(t, p, "Webhook subscription not found.")
	}
	requireCode(t, writer.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", other.ID, theirs.ID)), http.StatusForbidden)
}
