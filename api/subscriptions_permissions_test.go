package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

// TestSubscriptions_Permissions applies spec 5.1 through every endpoint:
// every credential of a Team or Enterprise account reads; writing needs the
// plan's permission; the Developer plan has no webhooks at all.
func TestSubscriptions_Permissions(t *testing.T) {
	s := newSubsAPI(t, nil)
	type credential struct {
		name     string
		plan     string
		token    bool // service token, else user
		license  string
		sets     []string
		canRead  bool
		canWrite bool
	}
	creds := []credential{
		{"EnterpriseUserAccountAdmin", webhooks.PlanEnterprise, false, "read_only", []string{"account_admin"}, true, true},
		{"EnterpriseUserAdmin", webhooks.PlanEnterprise, false, "analyst", []string{"admin"}, true, true},
		{"EnterpriseUserDeveloperSet", webhooks.PlanEnterprise, false, "developer", []string{"developer"}, true, true},
		{"EnterpriseUserDeveloperLicenseOnly", webhooks.PlanEnterprise, false, "developer", []string{"member"}, true, false},
		{"EnterpriseUserReadOnly", webhooks.PlanEnterprise, false, "read_only", []string{"read_only"}, true, false},
		{"EnterpriseTokenAccountAdmin", webhooks.PlanEnterprise, true, "", []string{"account_admin"}, true, true},
		{"EnterpriseTokenDeveloper", webhooks.PlanEnterprise, true, "", []string{"developer"}, true, true},
		{"EnterpriseTokenMember", webhooks.PlanEnterprise, true, "", []string{"member"}, true, false},
		{"EnterpriseTokenJobAdmin", webhooks.PlanEnterprise, true, "", []string{"job_admin"}, true, false},
		{"TeamUserDeveloperLicense", webhooks.PlanTeam, false, "developer", []string{"member"}, true, true},
		{"TeamUserReadOnlyLicenseAccountAdmin", webhooks.PlanTeam, false, "read_only", []string{"account_admin"}, true, false},
		{"TeamUserAnalystLicense", webhooks.PlanTeam, false, "analyst", []string{"developer"}, true, false},
		{"TeamTokenMember", webhooks.PlanTeam, true, "", []string{"member"}, true, true},
		{"TeamTokenAccountAdmin", webhooks.PlanTeam, true, "", []string{"account_admin"}, true, true},
		{"TeamTokenReadOnly", webhooks.PlanTeam, true, "", []string{"read_only"}, true, false},
		{"TeamTokenDeveloperSet", webhooks.PlanTeam, true, "", []string{"developer"}, true, false},
		{"DeveloperPlanUser", webhooks.PlanDeveloper, false, "developer", []string{"account_admin"}, false, false},
		{"DeveloperPlanToken", webhooks.PlanDeveloper, true, "", []string{"account_admin"}, false, false},
	}
	accounts := map[string]webhooks.Account{}
	for _, plan := range webhooks.Plans {
		accounts[plan] = s.mustCreateAccount(t, plan)
	}
	// Each Team/Enterprise account has one subscription, made directly in
	// the store by an admin, for the read and write checks.
	existing := map[string]string{}
	for _, plan := range []string{webhooks.PlanTeam, webhooks.PlanEnterprise} {
		admin := s.mustCreateServiceToken(t, accounts[plan].ID, "account_admin").Token
		resp := doJSON(t, http.MethodPost, s.subsURL(accounts[plan].ID), admin, validBody())
		requireStatus(t, resp, http.StatusCreated)
		var sub subItem
		resp.decodeData(t, &sub)
		existing[plan] = sub.ID
	}

	for _, c := range creds {
		t.Run(c.name, func(t *testing.T) {
			acct := accounts[c.plan]
			var token string
			if c.token {
				token = s.mustCreateServiceToken(t, acct.ID, c.sets...).Token
			} else {
				token = s.mustCreateUser(t, acct.ID, c.license, c.sets...).Token
			}
			subID := existing[c.plan]
			if subID == "" {
				subID = webhooks.NewID(webhooks.SubscriptionIDPrefix)
			}
			check := func(method, url string, body any, allowed bool, okCode int) {
				t.Helper()
				resp := doJSON(t, method, url, token, body)
				if allowed {
					requireStatus(t, resp, okCode)
					return
				}
				requireErrorEnvelope(t, resp, http.StatusForbidden)
				if c.plan == webhooks.PlanDeveloper && !strings.Contains(resp.Env.Status.UserMessage, "Team or Enterprise plan") {
					t.Errorf("developer plan refusal %q does not name the plans that include webhooks", resp.Env.Status.UserMessage)
				}
			}
			check(http.MethodGet, s.subsURL(acct.ID), nil, c.canRead, http.StatusOK)
			check(http.MethodGet, s.subURL(acct.ID, subID), nil, c.canRead, http.StatusOK)
			check(http.MethodPost, s.subsURL(acct.ID), validBody(), c.canWrite, http.StatusCreated)
			check(http.MethodPut, s.subURL(acct.ID, subID), map[string]any{"description": c.name}, c.canWrite, http.StatusOK)
			// Delete last, on a subscription of its own when allowed.
			if c.canWrite {
				resp := doJSON(t, http.MethodPost, s.subsURL(acct.ID), token, validBody())
				var mine subItem
				resp.decodeData(t, &mine)
				check(http.MethodDelete, s.subURL(acct.ID, mine.ID), nil, true, http.StatusOK)
			} else {
				check(http.MethodDelete, s.subURL(acct.ID, subID), nil, false, 0)
			}
		})
	}
	// Refused writes changed nothing: the shared subscriptions are still
	// there and only allowed credentials' descriptions were written.
	for plan, id := range existing {
		admin := s.mustCreateServiceToken(t, accounts[plan].ID, "account_admin").Token
		resp := doJSON(t, http.MethodGet, s.subURL(accounts[plan].ID, id), admin, nil)
		requireStatus(t, resp, http.StatusOK)
		var sub subItem
		resp.decodeData(t, &sub)
		for _, c := range creds {
			if c.plan == plan && !c.canWrite && sub.Description == c.name {
				t.Errorf("refused credential %s changed the description", c.name)
			}
		}
	}
}

func TestSubscriptions_NeedCredential(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	for _, r := range []struct{ method, url string }{
		{http.MethodGet, s.subsURL(s.Account.ID)},
		{http.MethodPost, s.subsURL(s.Account.ID)},
		{http.MethodGet, s.subURL(s.Account.ID, created.ID)},
		{http.MethodPut, s.subURL(s.Account.ID, created.ID)},
		{http.MethodDelete, s.subURL(s.Account.ID, created.ID)},
	} {
		for _, token := range []string{"", "whs_not-a-real-token"} {
			resp := doJSON(t, r.method, r.url, token, validBody())
			requireErrorEnvelope(t, resp, http.StatusUnauthorized)
		}
	}
	if n := s.subscriptionRowCount(t); n != 1 {
		t.Fatalf("%d subscriptions after unauthenticated requests, want 1", n)
	}
}

func TestSubscriptions_BadAccountID(t *testing.T) {
	s := newSubsAPI(t, nil)
	for _, acct := range []string{"abc", "0", "-1", "99999999999999999999"} {
		resp := doJSON(t, http.MethodGet, s.URL+"/api/v3/accounts/"+acct+"/webhooks/subscriptions", s.Writer, nil)
		requireErrorEnvelope(t, resp, http.StatusNotFound)
	}
}
