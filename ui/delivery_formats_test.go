package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventdata"
)

const uiRoutingKey = "R0UTINGKEYui0123456789abcdefABCD"

// formatForm is the format form's fields.
func formatForm(csrf, format, notifyOn, filter, key string) url.Values {
	return url.Values{"csrf_token": {csrf}, "format": {format}, "notify_on": {notifyOn}, "filter": {filter}, "pagerduty_routing_key": {key}}
}

// mustStoreEvent stores an event of acct as ingestion would have.
func (tu *testUI) mustStoreEvent(t *testing.T, acct webhooks.Account, id, eventType, jobID, env string, at time.Time) {
	t.Helper()
	data := eventdata.Marshal(webhooks.RunData{JobID: jobID, JobName: "job " + jobID, RunID: id, EnvironmentName: env,
		RunStatus: "Errored", RunStatusCode: 20, RunStartedAt: "2026-11-27T09:00:00Z"})
	if _, err := tu.DB.Pool.Exec(t.Context(), `INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, accepted_at)
		VALUES ($1, $2, $3, $4, $1, $5, 'dbt', $6)`, id, acct.ID, eventType, jobID, data, at); err != nil {
		t.Fatal(err)
	}
}

func TestDeliverySettingsPage_FormatNotifyOnFilterAndRoutingKey(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "member")
	sub := tu.mustCreateWebhook(t, acct, "alerts")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)

	form := b.get(path)
	requireCode(t, form, http.StatusOK)
	requireContains(t, form, "Format, notifications and filter", `id="format_standard" type="radio" name="format" value="standard" checked`,
		`id="notify_on_every" type="radio" name="notify_on" value="every" checked`, "no key is stored", `formaction="`+path+`/filter-check"`)

	t.Run("PagerDutyNeedsAKey", func(t *testing.T) {
		p := b.post(path+"/format", formatForm(csrfOf(t, form), "pagerduty", "every", "", ""))
		requireCode(t, p, http.StatusBadRequest)
		requireContains(t, p, `id="routing-key-error"`, "needs pagerduty_routing_key", "Nothing was saved",
			`id="format_pagerduty" type="radio" name="format" value="pagerduty" checked`)
		if o := tu.openedSettings(t, sub.ID); o.Format != "" {
			t.Errorf("a refused form stored format %q", o.Format)
		}
	})
	t.Run("FilterThatDoesNotCompile", func(t *testing.T) {
		p := b.post(path+"/format", formatForm(csrfOf(t, form), "slack", "every", `data.environmentName ==`, ""))
		requireCode(t, p, http.StatusBadRequest)
		requireContains(t, p, `id="filter-error"`, "Syntax error", "data.environmentName ==</textarea>")
		if o := tu.openedSettings(t, sub.ID); o.Format != "" {
			t.Errorf("a refused form stored format %q", o.Format)
		}
	})

	filter := `data.environmentName == "Prod"`
	saved := b.post(path+"/format", formatForm(csrfOf(t, form), "pagerduty", "state_change", filter, uiRoutingKey))
	requireRedirect(t, saved, path+"?done=format")
	got := b.get(saved.Location)
	requireContains(t, got, "The format, notifications and filter were saved", `value="pagerduty" checked`, `value="state_change" checked`,
		"data.environmentName == &#34;Prod&#34;</textarea>", "•••••••• (unchanged)", "a key is stored")
	requireNotContains(t, got, uiRoutingKey)
	if o := tu.openedSettings(t, sub.ID); o.Format != "pagerduty" || o.PagerDutyRoutingKey != uiRoutingKey {
		t.Fatalf("stored = %q %q", o.Format, o.PagerDutyRoutingKey)
	}
	// Saving again with the key left empty keeps it; the other settings
	// (saved by the other form) are untouched.
	requireRedirect(t, b.post(path+"/format", formatForm(csrfOf(t, got), "pagerduty", "every", filter, "")), path+"?done=format")
	if o := tu.openedSettings(t, sub.ID); o.PagerDutyRoutingKey != uiRoutingKey {
		t.Fatalf("the key left empty was not kept: %q", o.PagerDutyRoutingKey)
	}
	// Another format drops the key.
	requireRedirect(t, b.post(path+"/format", formatForm(csrfOf(t, got), "teams", "every", "", "")), path+"?done=format")
	if o := tu.openedSettings(t, sub.ID); o.Format != "teams" || o.PagerDutyRoutingKey != "" {
		t.Fatalf("after teams: %q %q", o.Format, o.PagerDutyRoutingKey)
	}
}

// TestDeliverySettingsPage_FilterCheck: the check shows which of the
// account's 20 latest events the typed filter matches, newest first, and
// saves nothing; a reader may check the stored filter.
func TestDeliverySettingsPage_FilterCheck(t *testing.T) {
	tu := newTestUI(t)
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	sub := tu.mustCreateWebhook(t, acct, "checks")
	start := time.Now().Add(-time.Hour).UTC()
	for i := range 22 {
		env := "Staging"
		if i%4 == 0 {
			env = "Prod"
		}
		tu.mustStoreEvent(t, acct, fmt.Sprintf("wev_ui%02d", i), webhooks.EventRunErrored, fmt.Sprint(100+i), env, start.Add(time.Duration(i)*time.Minute))
	}
	tu.mustStoreEvent(t, other, "wev_theirs", webhooks.EventRunErrored, "999", "Prod", start.Add(2*time.Hour))
	b := tu.newBrowser(t)
	b.mustSignIn(tu.mustCreateUser(t, acct, "developer", "member").Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s/delivery-settings", acct.ID, sub.ID)
	csrf := csrfOf(t, b.get(path))

	// Events 21..2 are the latest 20; Prod ones among them: 20, 16, 12, 8, 4.
	p := b.post(path+"/filter-check", formatForm(csrf, "slack", "every", `data.environmentName == "Prod"`, ""))
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, `id="filter-check-table"`, "The filter matches 5 of the account's latest 20 events", "Nothing was saved",
		"job 121", "job 102", `value="slack" checked`)
	requireNotContains(t, p, "job 101", "job 999")
	if n := strings.Count(p.Body, "badge badge-ok"); n != 5 {
		t.Errorf("%d rows say Matches, want 5", n)
	}
	if o := tu.openedSettings(t, sub.ID); o.Format != "" {
		t.Errorf("a check stored format %q", o.Format)
	}

	p = b.post(path+"/filter-check", formatForm(csrf, "standard", "every", `data.environment == "Prod"`, ""))
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, `id="filter-error"`, "undeclared reference", "data.environmentName")
	requireNotContains(t, p, `id="filter-check-table"`)

	// A reader sees the stored filter and may check it.
	requireRedirect(t, b.post(path+"/format", formatForm(csrf, "standard", "every", `data.jobId == "121"`, "")), path+"?done=format")
	reader := tu.newBrowser(t)
	reader.mustSignIn(tu.mustCreateUser(t, acct, "read_only", "read_only").Token)
	rp := reader.get(path)
	requireContains(t, rp, `id="format-settings"`, "data.jobId == &#34;121&#34;", `id="filter-check-button"`)
	checked := reader.post(path+"/filter-check", url.Values{"csrf_token": {csrfOf(t, rp)}, "filter": {`data.jobId == "121"`}})
	requireCode(t, checked, http.StatusOK)
	requireContains(t, checked, "The filter matches 1 of the account's latest 20 events")
	requireCode(t, reader.post(path+"/format", formatForm(csrfOf(t, rp), "slack", "every", "", "")), http.StatusForbidden)
}
