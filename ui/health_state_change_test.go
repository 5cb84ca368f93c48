package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// TestWebhookHealth_ShowsFailingJobs: the page of a webhook that is sent
// state changes only lists its failing jobs and since when; once they
// recovered, it says none is failing.
func TestWebhookHealth_ShowsFailingJobs(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Alerts", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tu.DB.Pool.Exec(t.Context(), `
		INSERT INTO webhook_delivery_settings (subscription_id, account_id, notify_on, created_at, updated_at)
		VALUES ($1, $2, 'state_change', now(), now())`, sub.ID, acct.ID); err != nil {
		t.Fatal(err)
	}
	// Ingested as the API's committer does: judged with the account's
	// routing as it is now.
	routing, err := tu.Store.WebhookRouting(t.Context(), []int64{acct.ID})
	if err != nil || len(routing) != 1 || !routing[0].Routed() {
		t.Fatalf("routing %+v (%v), want the account's, with a webhook following states", routing, err)
	}
	failed := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	ingest := func(typ, run string, at time.Time) {
		t.Helper()
		if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: webhooks.NewID(webhooks.EventIDPrefix),
			AccountID: acct.ID, Type: typ, JobID: "42", RunID: run, Data: webhooks.RunData{JobID: "42"}, ToolName: "dbt", OutcomeAt: at,
			RoutingVersion: routing[0].Version, Routed: true}}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(webhooks.EventRunErrored, "1", failed)
	ingest(webhooks.EventRunErrored, "2", failed.Add(time.Hour))
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	page := b.get(path)
	requireContains(t, page, "job 42: failing since 1 Nov 2026, 03:00:00 UTC")
	requireContains(t, page, "last run 2")
	ingest(webhooks.EventRunCompleted, "3", failed.Add(2*time.Hour))
	requireContains(t, b.get(path), "No job is failing.")
}
