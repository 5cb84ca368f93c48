package api_test

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
)

func TestErrors_UnknownRouteIsNotFoundEnvelope(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")

	for _, tt := range []struct{ method, path, token string }{
		{http.MethodGet, "/", ""},
		{http.MethodGet, "/nope", ""},
		{http.MethodGet, "/api/v2/nope", u.Token},
		{http.MethodPost, "/api/v2/users/1/apikey/extra", u.Token},
		{http.MethodGet, "/api/v9/accounts/", u.Token},
		{http.MethodDelete, "/does/not/exist/", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := doJSON(t, tt.method, a.URL+tt.path, tt.token, nil)
			requireErrorEnvelope(t, resp, http.StatusNotFound)
		})
	}
}

func TestErrors_WrongMethodIsMethodNotAllowedEnvelope(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	uid := strconv.FormatInt(u.ID, 10)

	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodPost, "/api/v2/accounts/", "GET"},
		{http.MethodDelete, "/api/v2/accounts", "GET"},
		{http.MethodPut, "/api/v2/accounts/" + strconv.FormatInt(acct.ID, 10) + "/", "GET"},
		{http.MethodGet, "/api/v2/users/" + uid + "/apikey/", "POST"},
		{http.MethodDelete, "/api/v2/users/" + uid + "/apikey", "POST"},
		{http.MethodPost, "/healthz", "GET"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := doJSON(t, tt.method, a.URL+tt.path, u.Token, nil)
			requireErrorEnvelope(t, resp, http.StatusMethodNotAllowed)
			if got := resp.Header.Get("Allow"); !strings.Contains(got, tt.allow) {
				t.Errorf("Allow = %q, want it to contain %s", got, tt.allow)
			}
		})
	}
	// The wrong-method calls rotated nothing.
	requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil), http.StatusOK)
}

func TestErrors_BodyOverOneMiBIsTooLarge(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	path := a.URL + "/api/v2/users/" + strconv.FormatInt(u.ID, 10) + "/apikey/"

	big := bytes.Repeat([]byte("a"), api.MaxBodyBytes+1)
	for name, token := range map[string]string{"Authenticated": u.Token, "Anonymous": ""} {
		t.Run(name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPost, path, token, big)
			requireErrorEnvelope(t, resp, http.StatusRequestEntityTooLarge)
		})
	}
	// The rejected request did not rotate the key.
	requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil), http.StatusOK)
}

func TestErrors_HealthEndpoints(t *testing.T) {
	a := newTestAPI(t)
	for _, path := range []string{"/healthz", "/readyz", "/healthz/"} {
		resp := doJSON(t, http.MethodGet, a.URL+path, "", nil)
		if resp.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s, want 200", path, resp.Code, resp.Body)
		}
	}
}
