package ui_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/ui"
	"github.com/jobhooks/jobhooks/worker"
)

// withRecordedDeliveries gives the UI a delivery service over the test's
// database whose Temporal never answers: the pages read what the test
// records, and nothing is ever attempted behind its back.
func withRecordedDeliveries(t *testing.T) uiOption {
	return func(tu *testUI, d *ui.Deps) {
		t.Helper()
		vars := map[string]string{"DATABASE_URL": tu.DB.URL, "TEMPORAL_ADDRESS": testenv.FreeAddress(t)}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		tc, err := client.NewLazyClient(client.Options{HostPort: cfg.TemporalAddress, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		tu.Store = deliveries.NewStore(tu.DB.Pool)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		d.Deliveries = dispatch.NewService(ctx, tc, tu.Store, slog.New(slog.DiscardHandler), worker.DispatchOptions(cfg))
		d.DeliveryReads = deliveryreads.NewService(tu.Store)
	}
}

// TestWebhookList_DispatchedWithoutAnswerIsNotNeverTriggered: a webhook
// whose endpoint refused the connection keeps http_status_code 0 (spec 3)
// but was dispatched: the list and its page say there was no HTTP answer,
// beside the time, instead of "Never triggered".
func TestWebhookList_DispatchedWithoutAnswerIsNotNeverTriggered(t *testing.T) {
	tu := newTestUI(t, withDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "developer", "account_admin")
	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	// Nothing listens there: every connection is refused.
	requireCode(t, b.createWebhook(acct.ID, func(csrf string) url.Values {
		f := validWebhookForm(csrf)
		f.Set("client_url", "http://"+testenv.FreeAddress(t)+"/hook")
		return f
	}), http.StatusCreated)
	sub := listOf(t, tu, acct.ID).Subscriptions[0]
	list := fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID)
	path := list + "/" + sub.ID
	requireContains(t, b.get(list), "Never triggered")

	tested := b.post(path+"/test", url.Values{"csrf_token": {csrfOf(t, b.get(path))}})
	requireContains(t, b.get(tested.Location), "The test delivery failed")
	sub = listOf(t, tu, acct.ID).Subscriptions[0]
	if sub.HTTPStatusCode != 0 || sub.DispatchedAt == nil {
		t.Fatalf("after a refused connection: http_status_code %d, dispatched_at %v; want 0 and set", sub.HTTPStatusCode, sub.DispatchedAt)
	}
	dispatched := sub.DispatchedAt.UTC().Format("2 Jan 2006, 15:04:05 UTC")

	for _, p := range []string{list, path} {
		page := b.get(p)
		requireCode(t, page, http.StatusOK)
		requireContains(t, page, ">No HTTP answer</span>", dispatched)
		requireNotContains(t, page, "Never triggered")
	}
}

// TestDeliveries_RetryingShowsNextAttempt: a retrying delivery says when
// its next attempt is due, in Recent Deliveries and on its own page; a
// final one says nothing of the kind.
func TestDeliveries_RetryingShowsNextAttempt(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "read_only", "member")
	sub, _, err := subscriptions.NewStore(tu.DB.Pool, tu.Box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Flaky", ClientURL: "https://hooks.example.com/", EventTypes: []string{webhooks.EventRunStarted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	record := func(runID, status string, retryIn time.Duration) string {
		t.Helper()
		eventID := webhooks.NewID(webhooks.EventIDPrefix)
		if _, _, err := tu.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: eventID, AccountID: acct.ID,
			Type: webhooks.EventRunStarted, JobID: "7", RunID: runID, Data: webhooks.RunData{JobID: "7"}, ToolName: "dbt"}}); err != nil {
			t.Fatal(err)
		}
		rec := deliveries.AttemptRecord{SubscriptionID: sub.ID, DeliveryID: testenv.DeliveryID(t, tu.DB.Pool, eventID, sub.ID), AttemptNumber: 1, StartedAt: time.Now(),
			Duration: 30 * time.Millisecond, StatusCode: 503, ErrorKind: "http_status", Status: status, RetryIn: retryIn, Body: deliveries.FixedBody{Payload: []byte(`{}`)}}
		if _, err := tu.Store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{rec}, deliveries.RecordPolicy{}); err != nil {
			t.Fatal(err)
		}
		return rec.DeliveryID
	}
	retrying := record("run-retrying", deliveries.StatusRetrying, 45*time.Minute)
	failed := record("run-failed", deliveries.StatusFailed, 0)

	d, err := tu.Store.Delivery(t.Context(), acct.ID, sub.ID, retrying)
	if err != nil {
		t.Fatal(err)
	}
	if d.NextAttemptAt == nil {
		t.Fatal("a retrying delivery has no next attempt time")
	}
	due := d.NextAttemptAt.UTC().Format("2 Jan 2006, 15:04:05 UTC")

	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)
	recent := b.get(path)
	requireCode(t, recent, http.StatusOK)
	requireContains(t, recent, `title="`+due+`">next attempt in 45 min</time>`)
	if n := strings.Count(recent.Body, "next attempt "); n != 1 {
		t.Errorf("Recent Deliveries shows %d next attempts, want only the retrying delivery's", n)
	}
	requireContains(t, b.get(path+"/deliveries/"+retrying), "<dt>Next attempt</dt><dd>"+due+" (in 45 min)</dd>")
	requireNotContains(t, b.get(path+"/deliveries/"+failed), "Next attempt")
}
