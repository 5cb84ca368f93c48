package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/jobhooks/jobhooks"
)

type accountItem struct {
	ID         int64  `json:"id"`
	Identifier string `json:"identifier"`
	Name       string `json:"name"`
	Plan       string `json:"plan"`
}

func TestListAccounts_ListsExactlyTheCredentialsAccounts(t *testing.T) {
	a := newTestAPI(t)
	acct1 := a.mustCreateAccount(t, webhooks.PlanTeam)
	acct2 := a.mustCreateAccount(t, webhooks.PlanEnterprise)
	user1 := a.mustCreateUser(t, acct1.ID, "developer", "account_admin")
	token2 := a.mustCreateServiceToken(t, acct2.ID, "member")

	tests := []struct {
		name  string
		token string
		want  webhooks.Account
	}{
		{"UserOfAccount1", user1.Token, acct1},
		{"ServiceTokenOfAccount2", token2.Token, acct2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/v2/accounts", "/api/v2/accounts/"} {
				resp := doJSON(t, http.MethodGet, a.URL+path, tt.token, nil)
				requireStatus(t, resp, http.StatusOK)
				var got []accountItem
				resp.decodeData(t, &got)
				want := accountItem{ID: tt.want.ID, Identifier: tt.want.Identifier, Name: tt.want.Name, Plan: tt.want.Plan}
				if len(got) != 1 || got[0] != want {
					t.Fatalf("GET %s data = %+v, want [%+v]", path, got, want)
				}
			}
		})
	}
}

func TestListAccounts_IDsAreJSONIntegers(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")

	resp := doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", u.Token, nil)
	requireStatus(t, resp, http.StatusOK)
	var raw []map[string]any
	resp.decodeData(t, &raw)
	if len(raw) != 1 {
		t.Fatalf("data = %s, want one account", resp.Env.Data)
	}
	id, ok := raw[0]["id"].(float64)
	if !ok || int64(id) != acct.ID {
		t.Fatalf("id = %#v (%T), want JSON number %d", raw[0]["id"], raw[0]["id"], acct.ID)
	}
}

func TestGetAccount(t *testing.T) {
	a := newTestAPI(t)
	acct1 := a.mustCreateAccount(t, webhooks.PlanTeam)
	acct2 := a.mustCreateAccount(t, webhooks.PlanTeam)
	user1 := a.mustCreateUser(t, acct1.ID, "developer", "account_admin")
	token1 := a.mustCreateServiceToken(t, acct1.ID, "account_admin")

	tests := []struct {
		name     string
		token    string
		path     string
		wantCode int
	}{
		{"OwnAccount", user1.Token, "/api/v2/accounts/" + strconv.FormatInt(acct1.ID, 10), http.StatusOK},
		{"OwnAccountTrailingSlash", user1.Token, "/api/v2/accounts/" + strconv.FormatInt(acct1.ID, 10) + "/", http.StatusOK},
		{"ServiceTokenOwnAccount", token1.Token, "/api/v2/accounts/" + strconv.FormatInt(acct1.ID, 10) + "/", http.StatusOK},
		{"UserOnOtherAccountForbidden", user1.Token, "/api/v2/accounts/" + strconv.FormatInt(acct2.ID, 10) + "/", http.StatusForbidden},
		{"ServiceTokenOnOtherAccountForbidden", token1.Token, "/api/v2/accounts/" + strconv.FormatInt(acct2.ID, 10), http.StatusForbidden},
		{"NonexistentAccountForbidden", user1.Token, "/api/v2/accounts/999999999/", http.StatusForbidden},
		{"MalformedIDNotFound", user1.Token, "/api/v2/accounts/abc/", http.StatusNotFound},
		{"ZeroIDNotFound", user1.Token, "/api/v2/accounts/0", http.StatusNotFound},
		{"NoTokenUnauthorized", "", "/api/v2/accounts/" + strconv.FormatInt(acct1.ID, 10), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, a.URL+tt.path, tt.token, nil)
			if tt.wantCode != http.StatusOK {
				requireErrorEnvelope(t, resp, tt.wantCode)
				return
			}
			requireStatus(t, resp, http.StatusOK)
			var got accountItem
			resp.decodeData(t, &got)
			if got.ID != acct1.ID || got.Identifier != acct1.Identifier || got.Plan != acct1.Plan {
				t.Fatalf("data = %+v, want account %+v", got, acct1)
			}
		})
	}
}

// BenchmarkListAccounts measures an authenticated request end to end: HTTP,
// token hash lookup and memberships query on PostgreSQL, envelope.
func BenchmarkListAccounts(b *testing.B) {
	a := newTestAPI(b)
	acct := a.mustCreateAccount(b, webhooks.PlanTeam)
	u := a.mustCreateUser(b, acct.ID, "developer", "account_admin")
	url := a.URL + "/api/v2/accounts/"
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if resp := doJSON(b, http.MethodGet, url, u.Token, nil); resp.Code != http.StatusOK {
				b.Errorf("GET accounts = %d %s", resp.Code, resp.Body)
				return
			}
		}
	})
}
