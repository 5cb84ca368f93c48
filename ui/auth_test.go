package ui_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/ui"
)

func sessionCookieOf(t *testing.T, p page) *http.Cookie {
	t.Helper()
	for _, c := range p.Cookies {
		if c.Name == "wh_ui_session" && c.MaxAge > 0 {
			return c
		}
	}
	t.Fatalf("no session cookie set; cookies %v", p.Cookies)
	return nil
}

func TestSignIn_PersonalKeyAndServiceToken(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	service := tu.mustCreateServiceToken(t, acct, "member")

	tests := map[string]struct{ token, who string }{
		"PersonalKey":  {user.Token, user.Email},
		"ServiceToken": {service, `Service token &#34;ci&#34;`},
	}
	for name, tt := range tests {
		token := tt.token
		t.Run(name, func(t *testing.T) {
			b := tu.newBrowser(t)
			p := b.signIn(token)
			requireRedirect(t, p, "/ui/accounts")
			c := sessionCookieOf(t, p)
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/ui" {
				t.Fatalf("cookie attributes: HttpOnly=%v SameSite=%v Path=%q", c.HttpOnly, c.SameSite, c.Path)
			}
			if c.Secure {
				t.Fatal("cookie is Secure on plain http; the browser would drop it")
			}
			if strings.Contains(c.Value, token) || strings.Contains(c.Value, token[4:20]) {
				t.Fatal("session cookie carries the token in the clear")
			}
			requireRedirect(t, b.get("/ui/accounts"), fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
			webhooksPage := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
			requireContains(t, webhooksPage, acct.Name)
			requireContains(t, webhooksPage, tt.who) // who is signed in, by name

		})
	}
	if logs := tu.Logs.String(); strings.Contains(logs, user.Token) || strings.Contains(logs, service) {
		t.Fatal("a token appears in the logs")
	}
}

func TestSignIn_RejectsBadInput(t *testing.T) {
	tu := newTestUI(t)
	tests := []struct {
		name     string
		token    string
		wantCode int
		wantText string
	}{
		{"Empty", "  ", http.StatusBadRequest, "Paste an API token"},
		{"Unknown", "whu_not-a-real-token", http.StatusUnauthorized, "This token is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tu.newBrowser(t)
			p := b.signIn(tt.token)
			requireCode(t, p, tt.wantCode)
			requireContains(t, p, tt.wantText, `aria-invalid="true"`)
			for _, c := range p.Cookies {
				if c.Name == "wh_ui_session" && c.MaxAge > 0 {
					t.Fatal("a session cookie was set for a bad token")
				}
			}
		})
	}
}

func TestSignIn_RequiresItsCSRFToken(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")

	t.Run("NoCookie", func(t *testing.T) {
		b := tu.newBrowser(t)
		p := b.post("/ui/sign-in", url.Values{"csrf_token": {"forged"}, "token": {user.Token}})
		requireCode(t, p, http.StatusForbidden)
	})
	t.Run("WrongToken", func(t *testing.T) {
		b := tu.newBrowser(t)
		requireCode(t, b.get("/ui/sign-in"), http.StatusOK)
		p := b.post("/ui/sign-in", url.Values{"csrf_token": {"forged"}, "token": {user.Token}})
		requireCode(t, p, http.StatusForbidden)
	})
}

func TestSignIn_NextStaysInsideTheUI(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	tests := []struct{ next, want string }{
		{"/ui/profile/api-access", "/ui/profile/api-access"},
		{"//evil.example/ui", "/ui/accounts"},
		{"https://evil.example/ui", "/ui/accounts"},
		{"/ui\\@evil.example", "/ui/accounts"},
		{"", "/ui/accounts"},
	}
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			b := tu.newBrowser(t)
			form := b.get("/ui/sign-in?next=" + url.QueryEscape(tt.next))
			p := b.post("/ui/sign-in", url.Values{"csrf_token": {csrfOf(t, form)}, "token": {user.Token}, "next": {tt.next}})
			if p.Location != tt.want {
				t.Fatalf("redirect to %q, want %q", p.Location, tt.want)
			}
		})
	}
}

func TestPages_WithoutSessionGoToSignIn(t *testing.T) {
	tu := newTestUI(t)
	b := tu.newBrowser(t)
	requireRedirect(t, b.get("/ui"), "/ui/sign-in")
	requireRedirect(t, b.get("/ui/"), "/ui/sign-in")
	requireRedirect(t, b.get("/"), "/ui")
	requireRedirect(t, b.get("/ui/profile/api-access"), "/ui/sign-in?next=%2Fui%2Fprofile%2Fapi-access")
	requireRedirect(t, b.post("/ui/profile/api-access/rotate", url.Values{}), "/ui/sign-in")
}

func TestSession_TamperedOrExpiredCookieIsRefused(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	tu := newTestUI(t, func(_ *testUI, d *ui.Deps) { d.Now = clock })
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")

	b := tu.newBrowser(t)
	c := sessionCookieOf(t, b.signIn(user.Token))

	t.Run("Tampered", func(t *testing.T) {
		other := tu.newBrowser(t)
		// Flip one bit of the sealed bytes themselves, so the cookie still
		// decodes and it is AES-GCM authentication that must refuse it.
		keyID, sealed, _ := strings.Cut(c.Value, ".")
		raw, err := base64.RawURLEncoding.DecodeString(sealed)
		if err != nil {
			t.Fatalf("session cookie is not keyID.base64url: %v", err)
		}
		raw[len(raw)/2] ^= 1
		tampered := keyID + "." + base64.RawURLEncoding.EncodeToString(raw)
		u, _ := url.Parse(tu.URL + "/ui")
		other.c.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: tampered, Path: "/ui"}})
		requireRedirect(t, other.get("/ui/profile/api-access"), "/ui/sign-in")
	})
	t.Run("Valid", func(t *testing.T) {
		requireCode(t, b.get("/ui/profile/api-access"), http.StatusOK)
	})
	t.Run("Expired", func(t *testing.T) {
		now = now.Add(13 * time.Hour)
		requireRedirect(t, b.get("/ui/profile/api-access"), "/ui/sign-in")
	})
}

func TestSession_SecureCookieBehindHTTPS(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	req, _ := http.NewRequest(http.MethodGet, tu.URL+"/ui/sign-in", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	form := b.do(req)
	for _, c := range form.Cookies {
		if !c.Secure {
			t.Fatalf("cookie %s is not Secure over https", c.Name)
		}
	}
	// Secure cookies are not sent back over http by the jar, so post by hand.
	body := url.Values{"csrf_token": {csrfOf(t, form)}, "token": {user.Token}}.Encode()
	req, _ = http.NewRequest(http.MethodPost, tu.URL+"/ui/sign-in", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.AddCookie(&http.Cookie{Name: "wh_ui_signin", Value: csrfOf(t, form)})
	p := b.do(req)
	requireRedirect(t, p, "/ui/accounts")
	if !sessionCookieOf(t, p).Secure {
		t.Fatal("session cookie is not Secure over https")
	}
}

func TestSignOut_EndsSessionAndNeedsCSRF(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	requireCode(t, b.post("/ui/sign-out", url.Values{"csrf_token": {"forged"}}), http.StatusForbidden)
	requireCode(t, b.get("/ui/profile/api-access"), http.StatusOK)

	p := b.get("/ui/profile/api-access")
	requireRedirect(t, b.post("/ui/sign-out", url.Values{"csrf_token": {csrfOf(t, p)}}), "/ui/sign-in")
	requireRedirect(t, b.get("/ui/profile/api-access"), "/ui/sign-in")
}

func TestPages_SecurityHeaders(t *testing.T) {
	tu := newTestUI(t)
	b := tu.newBrowser(t)
	p := b.get("/ui/sign-in")
	for h, want := range map[string]string{
		"Content-Security-Policy": "script-src 'self'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
	} {
		if !strings.Contains(p.Header.Get(h), want) {
			t.Errorf("%s = %q, want it to contain %q", h, p.Header.Get(h), want)
		}
	}
	css := b.get("/ui/static/app.css")
	requireCode(t, css, http.StatusOK)
	if !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("app.css Content-Type %q", css.Header.Get("Content-Type"))
	}
	requireCode(t, b.get("/ui/static/"), http.StatusNotFound)
	requireCode(t, b.get("/ui/no-such-page"), http.StatusNotFound)
}
