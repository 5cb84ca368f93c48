package ui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
)

var notificationSecretPattern = regexp.MustCompile(`id="notification-secret"[^>]*value="([A-Za-z0-9_-]+)"`)

// storedNotificationSecret opens the account's sealed secret as the worker
// does.
func storedNotificationSecret(t *testing.T, tu *testUI, accountID int64) string {
	t.Helper()
	var keyID string
	var sealed []byte
	if err := tu.DB.Pool.QueryRow(context.Background(),
		`SELECT secret_key_id, secret_ciphertext FROM account_notification_endpoints WHERE account_id = $1`, accountID).
		Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	secret, err := tu.Box.Open(keyID, sealed, webhooks.NotificationSecretAAD(accountID))
	if err != nil {
		t.Fatalf("open the stored secret: %v", err)
	}
	if strings.Contains(string(sealed), secret) {
		t.Fatal("the secret is stored in plain text")
	}
	return secret
}

// TestNotificationEndpointPage_SetShowsSecretOnceRotateRemove: the page
// says there is no endpoint; an invalid URL comes back with the error
// beside the field and nothing stored; a valid one is saved and its secret
// shown once (no-store), sealed at rest; the page then shows the URL, never
// the secret; a new URL keeps the secret; a rotation (after a
// confirmation) shows a new one once; Remove (after a confirmation) removes
// the endpoint. A read-only user sees the URL and no form, and may not
// post.
func TestNotificationEndpointPage_SetShowsSecretOnceRotateRemove(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t), withIncidents(t, &recordingWaker{}))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	admin := tu.mustCreateUser(t, acct, "developer", "account_admin")
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/notification-endpoint", acct.ID)
	b := tu.newBrowser(t)
	b.mustSignIn(admin.Token)

	list := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireContains(t, list, `href="`+path+`"`)
	p := b.get(path)
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, `id="endpoint-none"`, `<label for="url">`)

	bad := b.post(path, url.Values{"csrf_token": {csrfOf(t, p)}, "url": {"http://10.1.2.3/notices"}})
	requireCode(t, bad, http.StatusBadRequest)
	requireContains(t, bad, `id="url-error"`, "url points to 10.1.2.3", `aria-invalid="true"`)
	requireNotContains(t, bad, "client_url")
	var n int
	if err := tu.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM account_notification_endpoints`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("an invalid URL stored %d endpoints (%v)", n, err)
	}

	saved := b.post(path, url.Values{"csrf_token": {csrfOf(t, p)}, "url": {"https://hooks.example.com/notices"}})
	requireCode(t, saved, http.StatusOK)
	m := notificationSecretPattern.FindStringSubmatch(saved.Body)
	if m == nil {
		t.Fatalf("the secret is not shown:\n%s", saved.Body)
	}
	secret := m[1]
	requireContains(t, saved, "It will not be shown again", `data-copy="notification-secret"`)
	if !strings.Contains(html.UnescapeString(saved.Body), `value="`+webhooks.StandardWebhooksSecret(secret)+`"`) {
		t.Error("the Standard Webhooks form of the secret is not shown")
	}
	if saved.Header.Get("Cache-Control") != "no-store" {
		t.Error("the page with the secret may be cached")
	}
	if got := storedNotificationSecret(t, tu, acct.ID); got != secret {
		t.Fatal("the stored secret is not the one shown")
	}

	p = b.get(path)
	requireContains(t, p, `id="endpoint-url">https://hooks.example.com/notices<`)
	requireNotContains(t, p, secret)

	changed := b.post(path, url.Values{"csrf_token": {csrfOf(t, p)}, "url": {"https://hooks.example.com/v2"}})
	requireRedirect(t, changed, path+"?done=endpoint-saved")
	p = b.get(changed.Location)
	requireContains(t, p, "Its signing secret is unchanged", `id="endpoint-url">https://hooks.example.com/v2<`)
	if got := storedNotificationSecret(t, tu, acct.ID); got != secret {
		t.Fatal("a new URL changed the secret")
	}

	confirm := b.get(path + "/secret/rotate")
	requireContains(t, confirm, "Rotate the notification secret?", "The current secret stops")
	rotated := b.post(path+"/secret/rotate", url.Values{"csrf_token": {csrfOf(t, confirm)}})
	requireCode(t, rotated, http.StatusOK)
	m = notificationSecretPattern.FindStringSubmatch(rotated.Body)
	if m == nil || m[1] == secret {
		t.Fatalf("rotation did not show a new secret:\n%s", rotated.Body)
	}
	if got := storedNotificationSecret(t, tu, acct.ID); got != m[1] {
		t.Fatal("the stored secret is not the rotated one")
	}
	if logs := tu.Logs.String(); strings.Contains(logs, secret) || strings.Contains(logs, m[1]) {
		t.Fatal("a secret was logged")
	}

	// A read-only user: the URL, no form, no change.
	reader := tu.mustCreateUser(t, acct, "read_only", "read_only")
	rb := tu.newBrowser(t)
	rb.mustSignIn(reader.Token)
	rp := rb.get(path)
	requireContains(t, rp, `id="endpoint-url">https://hooks.example.com/v2<`, "but not change it")
	requireNotContains(t, rp, `name="url"`, "Rotate secret", "Remove")
	csrf := csrfOf(t, rp) // the sign-out form's
	requireCode(t, rb.post(path, url.Values{"csrf_token": {csrf}, "url": {"https://hooks.example.com/x"}}), http.StatusForbidden)
	requireCode(t, rb.post(path+"/delete", url.Values{"csrf_token": {csrf}}), http.StatusForbidden)
	requireCode(t, rb.get(path+"/secret/rotate"), http.StatusForbidden)

	remove := b.get(path + "/delete")
	requireContains(t, remove, "Remove the notification endpoint?")
	requireCode(t, b.post(path+"/delete", url.Values{}), http.StatusForbidden) // no CSRF token
	removed := b.post(path+"/delete", url.Values{"csrf_token": {csrfOf(t, remove)}})
	requireRedirect(t, removed, path+"?done=endpoint-removed")
	requireContains(t, b.get(removed.Location), "The notification endpoint was removed", `id="endpoint-none"`)
	requireCode(t, b.get(path+"/secret/rotate"), http.StatusNotFound)
}
