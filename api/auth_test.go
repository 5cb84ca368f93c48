package api_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

func TestAuthenticate_Schemes(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	st := a.mustCreateServiceToken(t, acct.ID, "member")

	tests := []struct {
		name          string
		authorization string
		wantCode      int
	}{
		{"TokenUser", "Token " + u.Token, http.StatusOK},
		{"BearerUser", "Bearer " + u.Token, http.StatusOK},
		{"TokenServiceToken", "Token " + st.Token, http.StatusOK},
		{"BearerServiceToken", "Bearer " + st.Token, http.StatusOK},
		{"LowercaseToken", "token " + u.Token, http.StatusOK},
		{"UppercaseBearer", "BEARER " + st.Token, http.StatusOK},
		{"ExtraSpacesAroundToken", "Token   " + u.Token + "  ", http.StatusOK},
		{"Missing", "", http.StatusUnauthorized},
		{"SchemeOnly", "Token", http.StatusUnauthorized},
		{"SchemeAndSpaceOnly", "Bearer ", http.StatusUnauthorized},
		{"NoScheme", u.Token, http.StatusUnauthorized},
		{"BasicScheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+u.Token)), http.StatusUnauthorized},
		{"UnknownToken", "Token whu_thisisnotarealtokenatallthisisnotarealtoken", http.StatusUnauthorized},
		{"TruncatedToken", "Token " + u.Token[:len(u.Token)-1], http.StatusUnauthorized},
		{"TokenWithSuffix", "Token " + u.Token + "x", http.StatusUnauthorized},
		{"NonASCIIToken", "Token ünïcödé", http.StatusUnauthorized},
		{"TabSeparated", "Token\t" + u.Token, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.authorization != "" {
				h.Set("Authorization", tt.authorization)
			}
			resp := doRequest(t, http.MethodGet, a.URL+"/api/v2/accounts/", h, nil)
			if tt.wantCode == http.StatusOK {
				requireStatus(t, resp, http.StatusOK)
				return
			}
			requireErrorEnvelope(t, resp, tt.wantCode)
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without a WWW-Authenticate header")
			}
		})
	}
}

func TestAuthenticate_EveryAPIRouteNeedsCredential(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	id := strconv.FormatInt(acct.ID, 10)
	uid := strconv.FormatInt(u.ID, 10)

	routes := []struct{ method, path string }{
		{http.MethodGet, "/api/v2/accounts/"},
		{http.MethodGet, "/api/v2/accounts/" + id + "/"},
		{http.MethodPost, "/api/v2/users/" + uid + "/apikey/"},
	}
	for _, r := range routes {
		for _, token := range []string{"", "whu_invalid"} {
			t.Run(r.method+" "+r.path+" token="+token, func(t *testing.T) {
				resp := doJSON(t, r.method, a.URL+r.path, token, nil)
				requireErrorEnvelope(t, resp, http.StatusUnauthorized)
			})
		}
	}
	// The user's key is still the one it was: nothing was rotated by the 401s.
	requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil), http.StatusOK)
}

func TestAuthenticate_CrossAccountDenied(t *testing.T) {
	a := newTestAPI(t)
	acct1 := a.mustCreateAccount(t, webhooks.PlanTeam)
	acct2 := a.mustCreateAccount(t, webhooks.PlanTeam)
	user1 := a.mustCreateUser(t, acct1.ID, "developer", "account_admin", "admin")
	token1 := a.mustCreateServiceToken(t, acct1.ID, "account_admin")
	user2 := a.mustCreateUser(t, acct2.ID, "developer", "account_admin")

	for name, token := range map[string]string{"User": user1.Token, "ServiceToken": token1.Token} {
		t.Run(name, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/"+strconv.FormatInt(acct2.ID, 10)+"/", token, nil)
			requireErrorEnvelope(t, resp, http.StatusForbidden)
			if strings.Contains(string(resp.Body), acct2.Name) || strings.Contains(string(resp.Body), acct2.Identifier) {
				t.Fatalf("403 body reveals account 2: %s", resp.Body)
			}
			list := doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", token, nil)
			requireStatus(t, list, http.StatusOK)
			if strings.Contains(string(list.Body), acct2.Identifier) {
				t.Fatalf("account list of account 1's credential shows account 2: %s", list.Body)
			}
		})
	}
	// Account 1's credentials cannot rotate account 2's user's key either.
	resp := doJSON(t, http.MethodPost, a.URL+"/api/v2/users/"+strconv.FormatInt(user2.ID, 10)+"/apikey/", user1.Token, nil)
	requireErrorEnvelope(t, resp, http.StatusForbidden)
	requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", user2.Token, nil), http.StatusOK)
}

// A database dump must not let anyone authenticate: no token, in any
// encoding, is stored; only its SHA-256 is.
func TestTokens_NotStoredInPlainText(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	st := a.mustCreateServiceToken(t, acct.ID, "member")

	// A rotated key must not be stored in plain text either.
	rot := doJSON(t, http.MethodPost, a.URL+"/api/v2/users/"+strconv.FormatInt(u.ID, 10)+"/apikey/", u.Token, nil)
	requireStatus(t, rot, http.StatusOK)
	var rotated struct {
		Key string `json:"key"`
	}
	rot.decodeData(t, &rotated)

	// Dump every column of every identity table as text.
	dump := dumpTables(t, a, "accounts", "users", "memberships", "user_api_keys", "service_tokens")
	for name, token := range map[string]string{"user key": u.Token, "rotated key": rotated.Key, "service token": st.Token} {
		body := strings.SplitN(token, "_", 2)[1]
		forms := []string{
			token,
			body,
			hex.EncodeToString([]byte(token)),
			base64.StdEncoding.EncodeToString([]byte(token)),
			base64.RawURLEncoding.EncodeToString([]byte(token)),
		}
		if raw, err := base64.RawURLEncoding.DecodeString(body); err == nil {
			if len(raw) < 32 {
				t.Errorf("%s carries %d random bytes, want at least 32", name, len(raw))
			}
			forms = append(forms, hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw))
		}
		for _, f := range forms {
			if strings.Contains(dump, strings.ToLower(f)) || strings.Contains(dump, f) {
				t.Errorf("%s found in the database dump (as %q)", name, f)
			}
		}
	}
	if !strings.Contains(dump, "\\x") {
		t.Fatalf("dump has no bytea hashes at all; the dump query is broken: %.200s", dump)
	}
}

func dumpTables(t *testing.T, a *testAPI, tables ...string) string {
	t.Helper()
	var sb strings.Builder
	for _, table := range tables {
		rows, err := a.DB.Pool.Query(context.Background(), "SELECT row_to_json(t)::text FROM "+table+" t")
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatalf("dump %s: %v", table, err)
			}
			sb.WriteString(line)
			sb.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
	}
	return sb.String()
}

func TestTokens_NeverLogged(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil)
	rot := doJSON(t, http.MethodPost, a.URL+"/api/v2/users/"+strconv.FormatInt(u.ID, 10)+"/apikey/", u.Token, nil)
	requireStatus(t, rot, http.StatusOK)
	doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil) // now a 401
	var rotated struct {
		Key string `json:"key"`
	}
	rot.decodeData(t, &rotated)
	logs := a.Logs.String()
	for _, secret := range []string{u.Token, rotated.Key} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a token appears in the logs:\n%s", logs)
		}
	}
}
