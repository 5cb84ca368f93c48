package ui_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/subscriptions"
)

var secretPattern = regexp.MustCompile(`id="hmac-secret"[^>]*value="([A-Za-z0-9_-]+)"`)

func validWebhookForm(csrf string) url.Values {
	return url.Values{
		"csrf_token":  {csrf},
		"name":        {"Orders sync"},
		"description": {"Tells the orders service"},
		"event_types": {webhooks.EventRunCompleted, webhooks.EventRunErrored},
		"job_ids":     {"12, 34"},
		"client_url":  {"https://hooks.example.com/runs"},
		"active":      {"true"},
	}
}

// createWebhook posts the Create New Webhook form and returns the page.
func (b *browser) createWebhook(accountID int64, form func(csrf string) url.Values) page {
	b.t.Helper()
	newForm := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/new", accountID))
	requireCode(b.t, newForm, http.StatusOK)
	return b.post(fmt.Sprintf("/ui/accounts/%d/webhooks", accountID), form(csrfOf(b.t, newForm)))
}

func listOf(t *testing.T, tu *testUI, accountID int64) subscriptions.Page {
	t.Helper()
	p, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).List(t.Context(), accountID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWebhookList_EmptyStateExplainsWebhooks(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	p := b.signIn(user.Token)
	requireRedirect(t, p, "/ui/accounts")
	// One account: the account list goes straight to its webhooks.
	requireRedirect(t, b.get("/ui/accounts"), fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	list := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireCode(t, list, http.StatusOK)
	requireContains(t, list, "No webhooks yet", "signed JSON message", "Create New Webhook")
}

func TestCreateWebhook_SecretShownOnceAndListed(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	created := b.createWebhook(acct.ID, validWebhookForm)
	requireCode(t, created, http.StatusCreated)
	m := secretPattern.FindStringSubmatch(created.Body)
	if m == nil {
		t.Fatalf("secret not shown:\n%s", created.Body)
	}
	secret := m[1]
	requireContains(t, created, "It will not be shown again", "data-copy=\"hmac-secret\"")
	// The same key for Standard Webhooks libraries: whsec_ and base64.
	if !strings.Contains(html.UnescapeString(created.Body), `id="standard-secret" class="mono" type="text" value="`+webhooks.StandardWebhooksSecret(secret)+`"`) {
		t.Errorf("the Standard Webhooks form of the secret is not shown:\n%s", created.Body)
	}
	if created.Header.Get("Cache-Control") != "no-store" {
		t.Fatal("page with the secret may be cached")
	}

	stored := listOf(t, tu, acct.ID)
	if stored.Total != 1 {
		t.Fatalf("%d subscriptions stored, want 1", stored.Total)
	}
	sub := stored.Subscriptions[0]
	if sub.Name != "Orders sync" || sub.ClientURL != "https://hooks.example.com/runs" || !sub.Active ||
		fmt.Sprint(sub.EventTypes) != "[job.run.completed job.run.errored]" || fmt.Sprint(sub.JobIDs) != "[12 34]" {
		t.Fatalf("stored %+v", sub)
	}

	list := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireContains(t, list, "Orders sync", "job.run.completed", "job.run.errored", "12, 34", "Active", "Never triggered", "Never")
	requireNotContains(t, list, secret)
	detail := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID))
	requireCode(t, detail, http.StatusOK)
	requireContains(t, detail, sub.ID, "Tells the orders service", "Shown once")
	requireNotContains(t, detail, secret)
	if strings.Contains(tu.Logs.String(), secret) {
		t.Fatal("the secret was logged")
	}
}

func TestCreateWebhook_AllJobsWhenJobIDsEmpty(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("job_ids", " ")
		f.Del("active")
		return f
	})
	requireCode(t, p, http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	if len(sub.JobIDs) != 0 || sub.Active {
		t.Fatalf("job ids %v active %v, want none and inactive", sub.JobIDs, sub.Active)
	}
	requireContains(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID)), "All jobs", "Inactive")
}

func TestCreateWebhook_ErrorsBesideFieldsNothingStored(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)

	tests := []struct {
		name  string
		field string
		edit  func(url.Values)
	}{
		{"BlankName", "name", func(f url.Values) { f.Set("name", "   ") }},
		{"LongName", "name", func(f url.Values) { f.Set("name", strings.Repeat("n", 256)) }},
		{"NoEventTypes", "event_types", func(f url.Values) { f.Del("event_types") }},
		{"UnknownEventType", "event_types", func(f url.Values) { f["event_types"] = []string{"job.run.exploded"} }},
		{"JobIDNotNumber", "job_ids", func(f url.Values) { f.Set("job_ids", "12, abc") }},
		{"JobIDNegative", "job_ids", func(f url.Values) { f.Set("job_ids", "-4") }},
		{"JobIDTwice", "job_ids", func(f url.Values) { f.Set("job_ids", "7, 7") }},
		{"NoURL", "client_url", func(f url.Values) { f.Set("client_url", "") }},
		{"NotAURL", "client_url", func(f url.Values) { f.Set("client_url", "hooks dot example") }},
		{"PrivateAddress", "client_url", func(f url.Values) { f.Set("client_url", "http://10.1.2.3/hook") }},
		{"NameOfPrivateAddress", "client_url", func(f url.Values) { f.Set("client_url", "https://internal.example.com/hook") }},
		{"MetadataAddress", "client_url", func(f url.Values) { f.Set("client_url", "http://169.254.169.254/latest") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := b.createWebhook(acct.ID, func(csrf string) url.Values {
				f := validWebhookForm(csrf)
				tt.edit(f)
				return f
			})
			requireCode(t, p, http.StatusBadRequest)
			requireContains(t, p, `id="`+tt.field+`-error"`, "Please correct the highlighted field")
			// What was typed is kept.
			requireContains(t, p, "Tells the orders service")
			if n := listOf(t, tu, acct.ID).Total; n != 0 {
				t.Fatalf("%d subscriptions stored after an invalid form", n)
			}
		})
	}
}

func TestWebhook_EditActivateDelete(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanEnterprise)
	user := tu.mustCreateUser(t, acct, "developer", "developer")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	requireCode(t, b.createWebhook(acct.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	edit := b.get(path + "/edit")
	requireCode(t, edit, http.StatusOK)
	requireContains(t, edit, `value="Orders sync"`, `value="12, 34"`, "Save changes")

	form := validWebhookForm(csrfOf(t, edit))
	form.Set("name", "Orders sync v2")
	form.Set("job_ids", "")
	form["event_types"] = []string{webhooks.EventRunStarted}
	requireRedirect(t, b.post(path, form), path+"?done=saved")
	got, _ := subscriptions.NewStore(tu.DB.Pool, tu.Box).Get(t.Context(), acct.ID, sub.ID)
	if got.Name != "Orders sync v2" || len(got.JobIDs) != 0 || fmt.Sprint(got.EventTypes) != "[job.run.started]" {
		t.Fatalf("after edit: %+v", got)
	}

	// An invalid edit changes nothing.
	form.Set("name", "")
	requireCode(t, b.post(path, form), http.StatusBadRequest)
	got, _ = subscriptions.NewStore(tu.DB.Pool, tu.Box).Get(t.Context(), acct.ID, sub.ID)
	if got.Name != "Orders sync v2" {
		t.Fatalf("invalid edit stored: %+v", got)
	}

	detail := b.get(path + "?done=saved")
	requireContains(t, detail, "Your changes were saved", "Orders sync v2", "Deactivate")
	requireRedirect(t, b.post(path+"/active", url.Values{"csrf_token": {csrfOf(t, detail)}, "active": {"false"}}), path+"?done=deactivated")
	detail = b.get(path)
	requireContains(t, detail, "Inactive", ">Activate<")
	requireRedirect(t, b.post(path+"/active", url.Values{"csrf_token": {csrfOf(t, detail)}, "active": {"true"}}), path+"?done=activated")

	confirm := b.get(path + "/delete")
	requireCode(t, confirm, http.StatusOK)
	requireContains(t, confirm, "Delete this webhook?", "cannot be undone")
	requireRedirect(t, b.post(path+"/delete", url.Values{"csrf_token": {csrfOf(t, confirm)}}), fmt.Sprintf("/ui/accounts/%d/webhooks?done=deleted", acct.ID))
	requireCode(t, b.get(path), http.StatusNotFound)
	requireContains(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks?done=deleted", acct.ID)), "The webhook was deleted", "No webhooks yet")
}

func TestWebhook_ReadOnlyCredentialSeesNoButtonsAndIsRefused(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	admin := tu.mustCreateUser(t, acct, "developer", "account_admin")
	reader := tu.mustCreateUser(t, acct, "read_only", "read_only")
	readerToken := tu.mustCreateServiceToken(t, acct, "read_only")

	ab := tu.newBrowser(t)
	ab.mustSignIn(admin.Token)
	requireCode(t, ab.createWebhook(acct.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	for name, token := range map[string]string{"User": reader.Token, "ServiceToken": readerToken} {
		t.Run(name, func(t *testing.T) {
			b := tu.newBrowser(t)
			b.mustSignIn(token)
			list := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
			requireCode(t, list, http.StatusOK)
			requireContains(t, list, "Orders sync", "but not change them")
			requireNotContains(t, list, "Create New Webhook")
			detail := b.get(path)
			requireCode(t, detail, http.StatusOK)
			requireNotContains(t, detail, ">Edit<", "Deactivate", "Delete…", ">Test<")
			csrf := csrfOf(t, detail) // the sign-out form's token is a valid one

			requireCode(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/new", acct.ID)), http.StatusForbidden)
			requireCode(t, b.get(path+"/edit"), http.StatusForbidden)
			requireCode(t, b.get(path+"/delete"), http.StatusForbidden)
			requireCode(t, b.post(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID), validWebhookForm(csrf)), http.StatusForbidden)
			requireCode(t, b.post(path, validWebhookForm(csrf)), http.StatusForbidden)
			requireCode(t, b.post(path+"/active", url.Values{"csrf_token": {csrf}, "active": {"false"}}), http.StatusForbidden)
			requireCode(t, b.post(path+"/delete", url.Values{"csrf_token": {csrf}}), http.StatusForbidden)

			stored := listOf(t, tu, acct.ID)
			if stored.Total != 1 || !stored.Subscriptions[0].Active || stored.Subscriptions[0].Name != "Orders sync" {
				t.Fatalf("a read-only credential changed webhooks: %+v", stored)
			}
		})
	}
}

func TestWebhook_OtherAccountsAreInvisible(t *testing.T) {
	tu := newTestUI(t)
	a := tu.mustCreateAccount(t, webhooks.PlanTeam)
	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	owner := tu.mustCreateUser(t, a, "developer", "account_admin")
	stranger := tu.mustCreateUser(t, other, "developer", "account_admin")

	ob := tu.newBrowser(t)
	ob.mustSignIn(owner.Token)
	requireCode(t, ob.createWebhook(a.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, a.ID).Subscriptions[0]

	b := tu.newBrowser(t)
	b.mustSignIn(stranger.Token)
	requireCode(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", a.ID)), http.StatusForbidden)
	requireCode(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", a.ID, sub.ID)), http.StatusForbidden)
	// Through the stranger's own account the id is simply unknown.
	own := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks/%s", other.ID, sub.ID))
	requireCode(t, own, http.StatusNotFound)
	requireNotContains(t, own, "Orders sync")
	requireCode(t, b.post(fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delete", other.ID, sub.ID), url.Values{"csrf_token": {csrfOf(t, own)}}), http.StatusNotFound)
	requireCode(t, b.get("/ui/accounts/abc/webhooks"), http.StatusNotFound)
	if listOf(t, tu, a.ID).Total != 1 {
		t.Fatal("the stranger deleted the webhook")
	}
}

func TestWebhook_DeveloperPlanHasNoWebhooks(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanDeveloper)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireCode(t, p, http.StatusForbidden)
	requireContains(t, p, "Team or Enterprise plan")
}

func TestCreateWebhook_RefusesForgedCSRF(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	requireCode(t, b.post(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID), validWebhookForm("forged")), http.StatusForbidden)
	if listOf(t, tu, acct.ID).Total != 0 {
		t.Fatal("a forged form created a webhook")
	}
}

func TestCreateWebhook_ShowsEveryFieldErrorAtOnce(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.createWebhook(acct.ID, func(csrf string) url.Values {
		return url.Values{"csrf_token": {csrf}, "name": {""}, "job_ids": {"x"}, "client_url": {"http://10.0.0.1/"}}
	})
	requireCode(t, p, http.StatusBadRequest)
	requireContains(t, p, `id="name-error"`, `id="event_types-error"`, `id="job_ids-error"`, `id="client_url-error"`, "highlighted fields")
	if listOf(t, tu, acct.ID).Total != 0 {
		t.Fatal("an invalid form stored a webhook")
	}
}

func TestEditWebhook_ShowsEveryFieldErrorAtOnce(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	requireCode(t, b.createWebhook(acct.ID, validWebhookForm), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	form := validWebhookForm(csrfOf(t, b.get(path+"/edit")))
	form.Set("name", "")
	form.Set("job_ids", "12, x")
	form.Set("client_url", "http://10.0.0.1/hook")
	p := b.post(path, form)
	requireCode(t, p, http.StatusBadRequest)
	requireContains(t, p, `id="name-error"`, `id="job_ids-error"`, `id="client_url-error"`, "highlighted fields",
		"client_url points to 10.0.0.1") // the API's words for the same problem
	if got := listOf(t, tu, acct.ID).Subscriptions[0]; got.Name != sub.Name || got.ClientURL != sub.ClientURL {
		t.Fatalf("an invalid edit changed the webhook: %+v", got)
	}
}

func TestWebhookList_Pages(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	store := subscriptions.NewStore(tu.DB.Pool, tu.Box)
	for i := 1; i <= 21; i++ {
		if _, _, err := store.Create(t.Context(), webhooks.Subscription{
			AccountID: acct.ID, Name: fmt.Sprintf("hook-%02d", i), ClientURL: "https://hooks.example.com/",
			EventTypes: []string{webhooks.EventRunStarted}, Active: true,
		}); err != nil {
			t.Fatal(err)
		}
	}
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	base := fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID)
	first := b.get(base)
	requireContains(t, first, "Showing 1–20 of 21", "Next →", "hook-01", "hook-20")
	requireNotContains(t, first, "hook-21", "← Previous")
	second := b.get(base + "?offset=20")
	requireContains(t, second, "Showing 21–21 of 21", "← Previous", "hook-21")
	requireNotContains(t, second, "hook-20", "Next →")
	for _, bad := range []string{"?offset=-3", "?offset=abc"} {
		p := b.get(base + bad) // a bad offset shows the first page
		requireCode(t, p, http.StatusOK)
		requireContains(t, p, "Showing 1–20 of 21", "hook-01")
		requireNotContains(t, p, "← Previous", "hook-21")
	}
}

func TestCreateWebhook_OversizedFormIsRefused(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("description", strings.Repeat("d", 2<<20))
		return f
	})
	requireCode(t, p, http.StatusRequestEntityTooLarge)
	if listOf(t, tu, acct.ID).Total != 0 {
		t.Fatal("an oversized form stored a webhook")
	}
}

func TestAccounts_ListsEveryMembership(t *testing.T) {
	tu := newTestUI(t)
	first := tu.mustCreateAccount(t, webhooks.PlanTeam)
	second := tu.mustCreateAccount(t, webhooks.PlanEnterprise)
	user := tu.mustCreateUser(t, first, "developer", "account_admin")
	if err := dbq.New(tu.DB.Pool).AddMembership(t.Context(), dbq.AddMembershipParams{
		AccountID: second.ID, UserID: user.ID, License: "read_only", PermissionSets: []string{"read_only"},
	}); err != nil {
		t.Fatal(err)
	}
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.get("/ui/accounts")
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, first.Name, first.Identifier, second.Name, second.Identifier, "enterprise",
		fmt.Sprintf(`href="/ui/accounts/%d/webhooks"`, second.ID), "All accounts")
	// Rights are per account: admin in the first, read-only in the second.
	requireContains(t, b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", first.ID)), "Create New Webhook")
	ro := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", second.ID))
	requireContains(t, ro, "but not change them")
	requireNotContains(t, ro, "Create New Webhook")
}
