package ui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

// TestRotateSecret_ConfirmThenShowTheNewSecretOnce: the webhook page offers
// "Rotate secret…"; the confirmation asks how long the previous secret
// stays valid; the next page shows the new secret once (not cached) and
// the previous one is kept until its expiry.
func TestRotateSecret_ConfirmThenShowTheNewSecretOnce(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	created := b.createWebhook(acct.ID, validWebhookForm)
	requireCode(t, created, http.StatusCreated)
	first := secretPattern.FindStringSubmatch(created.Body)[1]
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	requireContains(t, b.get(path), `href="`+path+`/secret/rotate"`, "Rotate secret")
	confirm := b.get(path + "/secret/rotate")
	requireCode(t, confirm, http.StatusOK)
	requireContains(t, confirm, "Rotate the signing secret?", `name="overlap" value="86400"`, `value="0"`)

	rotated := b.post(path+"/secret/rotate", url.Values{"csrf_token": {csrfOf(t, confirm)}, "overlap": {"3600"}})
	requireCode(t, rotated, http.StatusOK)
	if rotated.Header.Get("Cache-Control") != "no-store" {
		t.Error("the page with the new secret may be cached")
	}
	m := secretPattern.FindStringSubmatch(rotated.Body)
	if m == nil || m[1] == first {
		t.Fatalf("no new secret on the page:\n%s", rotated.Body)
	}
	if !strings.Contains(html.UnescapeString(rotated.Body), webhooks.StandardWebhooksSecret(m[1])) {
		t.Error("the Standard Webhooks form of the new secret is not shown")
	}
	requireContains(t, rotated, "still signs <code>webhook-signature</code> until")
	var previousKept bool
	if err := tu.DB.Pool.QueryRow(context.Background(),
		"SELECT previous_secret_expires_at > now() + interval '50 minutes' FROM webhook_subscriptions WHERE id = $1", sub.ID).Scan(&previousKept); err != nil || !previousKept {
		t.Errorf("previous secret kept for the hour: %v (%v)", previousKept, err)
	}
	// The secret is not shown again.
	requireNotContains(t, b.get(path), m[1])

	// A choice the form does not offer changes nothing.
	bad := b.post(path+"/secret/rotate", url.Values{"csrf_token": {csrfOf(t, confirm)}, "overlap": {"999999"}})
	if bad.Code == http.StatusOK || strings.Contains(bad.Body, `id="hmac-secret"`) {
		t.Errorf("an unoffered overlap rotated the secret: %d", bad.Code)
	}
}
