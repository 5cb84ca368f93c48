package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// TestWebhooks_SearchFindsDeliveriesByEventJobOrRunID: the webhooks page's
// search box finds the account's deliveries across its webhooks by event
// id, job id or run id, links each to its page and names its webhook, and
// never shows another account's.
func TestWebhooks_SearchFindsDeliveriesByEventJobOrRunID(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	subs := subscriptions.NewStore(tu.DB.Pool, tu.Box)
	newHook := func(acct webhooks.Account, name string) webhooks.Subscription {
		sub, _, err := subs.Create(t.Context(), webhooks.Subscription{
			AccountID: acct.ID, Name: name, ClientURL: "https://hooks.example.com/", EventTypes: []string{webhooks.EventRunStarted}, Active: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	ingest := func(acct webhooks.Account, eventID string) {
		if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{
			ID: eventID, AccountID: acct.ID, Type: webhooks.EventRunStarted, JobID: "7007", RunID: "run-77",
			Data: webhooks.RunData{JobID: "7007"}, ToolName: "dbt",
		}}); err != nil {
			t.Fatal(err)
		}
	}
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "read_only", "member")
	first, second := newHook(acct, "First"), newHook(acct, "Second")
	eventID := webhooks.NewID(webhooks.EventIDPrefix)
	ingest(acct, eventID)
	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	otherHook := newHook(other, "Other")
	otherEvent := webhooks.NewID(webhooks.EventIDPrefix)
	ingest(other, otherEvent)

	firstDelivery := testenv.DeliveryID(t, tu.DB.Pool, eventID, first.ID)

	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	list := fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID)
	links := []string{
		fmt.Sprintf(`href="%s/%s/deliveries/%s"`, list, first.ID, firstDelivery),
		fmt.Sprintf(`href="%s/%s/deliveries/%s"`, list, second.ID, testenv.DeliveryID(t, tu.DB.Pool, eventID, second.ID)),
		// Each names the webhook it went to, linked to its page.
		fmt.Sprintf(`<a href="%s/%s">First</a>`, list, first.ID),
		fmt.Sprintf(`<a href="%s/%s">Second</a>`, list, second.ID),
	}
	otherDelivery := testenv.DeliveryID(t, tu.DB.Pool, otherEvent, otherHook.ID)

	requireContains(t, b.get(list), `name="q"`, "Event id, job id or run id")
	for _, tc := range []struct{ q, as string }{{eventID, "event id"}, {"7007", "job id"}, {"run-77", "run id"}} {
		p := b.get(list + "?q=" + url.QueryEscape(tc.q))
		requireCode(t, p, http.StatusOK)
		requireContains(t, p, append([]string{"2 deliveries of " + tc.as}, links...)...)
		requireNotContains(t, p, otherDelivery)
	}
	requireContains(t, b.get(list+"?q="+otherEvent), "No deliveries with event id, job id or run id")
	requireContains(t, b.get(list+"?q=%3Cscript%3E"), "&lt;script&gt;")
	requireCode(t, b.get(fmt.Sprintf("%s/%s/deliveries/%s", list, first.ID, firstDelivery)), http.StatusOK)
}
