package webhooksettings_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// mustStoreEvent stores an event of acct accepted at at, as ingestion
// would have.
func (f *fixture) mustStoreEvent(t *testing.T, acct webhooks.Account, id, eventType, env string, at time.Time) {
	t.Helper()
	data := eventdata.Marshal(webhooks.RunData{JobID: "42", JobName: "Nightly", RunID: id, EnvironmentName: env,
		RunStatus: "Errored", RunStatusCode: 20, RunStartedAt: "2026-11-27T09:00:00Z"})
	if _, err := f.db.Pool.Exec(t.Context(), `INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, accepted_at)
		VALUES ($1, $2, $3, '42', $1, $4, 'dbt', $5)`, id, acct.ID, eventType, data, at); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) access(t *testing.T, acct webhooks.Account) subscriptions.Access {
	t.Helper()
	subs, err := subscriptions.NewService(f.subs, &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	p := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: acct, License: "developer", PermissionSets: []string{"member"}}}}
	a, err := subs.Authorize(p, strconv.FormatInt(acct.ID, 10), false)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestService_CheckFilter: the filter is checked against the account's 20
// latest events, newest first, as the webhook would see them (its name
// included); other accounts' events and webhooks are not reachable; a
// filter that does not compile is the problem Update would give; nothing
// is stored.
func TestService_CheckFilter(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	svc, err := webhooksettings.NewService(f.store)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 25 {
		env := "Staging"
		if i%3 == 0 {
			env = "Prod"
		}
		f.mustStoreEvent(t, f.a, fmt.Sprintf("wev_a%02d", i), webhooks.EventRunErrored, env, start.Add(time.Duration(i)*time.Minute))
	}
	f.mustStoreEvent(t, f.b, "wev_b_latest", webhooks.EventRunErrored, "Prod", start.Add(time.Hour))

	got, err := svc.CheckFilter(t.Context(), f.access(t, f.a), sub.ID, `data.environmentName == "Prod" && webhookName == "hook"`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != webhooksettings.CheckedEvents {
		t.Fatalf("checked %d events, want %d", len(got), webhooksettings.CheckedEvents)
	}
	for j, ce := range got {
		i := 24 - j
		if ce.EventID != fmt.Sprintf("wev_a%02d", i) || ce.Matched != (i%3 == 0) || ce.Err != "" || ce.Data.JobName != "Nightly" {
			t.Errorf("event %d = %+v; want wev_a%02d matched %v", j, ce, i, i%3 == 0)
		}
	}

	_, err = svc.CheckFilter(t.Context(), f.access(t, f.a), sub.ID, `data.environmentName ==`)
	var p webhooks.Problems
	if !errors.As(err, &p) || p[0].Field != "filter" {
		t.Errorf("a filter that does not compile: %v, want a problem naming filter", err)
	}
	if _, err := svc.CheckFilter(t.Context(), f.access(t, f.b), sub.ID, `true`); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("another account's webhook: %v, want not found", err)
	}
	if st, _ := f.store.Get(t.Context(), f.a.ID, sub.ID); st.Filter != nil || st.UpdatedAt != nil {
		t.Errorf("a check stored something: %+v", st)
	}
}

// An event the filter fails on is reported, not matched.
func TestService_CheckFilterReportsEvaluationErrors(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	svc, _ := webhooksettings.NewService(f.store)
	f.mustStoreEvent(t, f.a, "wev_1", webhooks.EventRunErrored, "Prod", time.Now())
	got, err := svc.CheckFilter(t.Context(), f.access(t, f.a), sub.ID, `int(data.jobName) > 1`)
	if err != nil || len(got) != 1 || got[0].Matched || got[0].Err == "" {
		t.Fatalf("CheckFilter = %+v, %v; want one event, not matched, with the error", got, err)
	}
}
