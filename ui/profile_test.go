package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/jobhooks/jobhooks"
)

var newKeyPattern = regexp.MustCompile(`id="new-key"[^>]*value="(whu_[A-Za-z0-9_-]+)"`)

func TestAPIAccess_ShowsMaskedKey(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	p := b.get("/ui/profile/api-access")
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, "whu_", user.Token[len(user.Token)-4:], "Rotate key")
	requireNotContains(t, p, user.Token)
}

func TestRotate_NewKeyShownOnceOldKeyRefused(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	other := tu.newBrowser(t) // another browser signed in with the same key
	other.mustSignIn(user.Token)

	confirm := b.get("/ui/profile/api-access/rotate")
	requireCode(t, confirm, http.StatusOK)
	requireContains(t, confirm, "Rotate your API key?", "stops working immediately")

	p := b.post("/ui/profile/api-access/rotate", url.Values{"csrf_token": {csrfOf(t, confirm)}})
	requireCode(t, p, http.StatusOK)
	m := newKeyPattern.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("new key not shown:\n%s", p.Body)
	}
	newKey := m[1]
	requireContains(t, p, "It will not be shown again")
	if p.Header.Get("Cache-Control") != "no-store" {
		t.Fatal("the page with the new key may be cached")
	}

	if _, err := tu.Identity.Authenticate(t.Context(), user.Token); webhooks.ErrorCode(err) != webhooks.EUNAUTHORIZED {
		t.Fatalf("old key still authenticates: %v", err)
	}
	if got, err := tu.Identity.Authenticate(t.Context(), newKey); err != nil || got.UserID != user.ID {
		t.Fatalf("new key: %v, %v", got, err)
	}

	// This browser moved to the new key; the new key is not shown again.
	again := b.get("/ui/profile/api-access")
	requireCode(t, again, http.StatusOK)
	requireNotContains(t, again, newKey, "It will not be shown again")
	requireContains(t, again, newKey[len(newKey)-4:])

	// The other browser's session held the old key: it ends at once.
	requireRedirect(t, other.get("/ui/profile/api-access"), "/ui/sign-in")
	// And the old key cannot sign in again.
	requireCode(t, tu.newBrowser(t).signIn(user.Token), http.StatusUnauthorized)
}

func TestRotate_RefusesForgedOrMissingCSRF(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	// A CSRF token of another session does not work in this one.
	other := tu.newBrowser(t)
	other.mustSignIn(user.Token)
	otherCSRF := csrfOf(t, other.get("/ui/profile/api-access/rotate"))

	for name, form := range map[string]url.Values{
		"Missing":      {},
		"Forged":       {"csrf_token": {"AAAA"}},
		"OtherSession": {"csrf_token": {otherCSRF}},
	} {
		t.Run(name, func(t *testing.T) {
			requireCode(t, b.post("/ui/profile/api-access/rotate", form), http.StatusForbidden)
			if _, err := tu.Identity.Authenticate(t.Context(), user.Token); err != nil {
				t.Fatalf("key was rotated without a valid CSRF token: %v", err)
			}
		})
	}
}

func TestRotate_ServiceTokenHasNoPersonalKey(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	token := tu.mustCreateServiceToken(t, acct, "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(token)

	p := b.get("/ui/profile/api-access")
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, "Signed in with a service token")
	requireNotContains(t, p, "Rotate key")
	requireCode(t, b.get("/ui/profile/api-access/rotate"), http.StatusForbidden)
	requireCode(t, b.post("/ui/profile/api-access/rotate", url.Values{"csrf_token": {csrfOf(t, p)}}), http.StatusForbidden)
	if _, err := tu.Identity.Authenticate(t.Context(), token); err != nil {
		t.Fatalf("service token stopped working: %v", err)
	}
}
