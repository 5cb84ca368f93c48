package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
)

// TestWebhookPage_BreakerBannerAndProbeNow: while a webhook's breaker is
// open its page says since when, when the next probe goes, how many
// deliveries wait and how many probes failed, with a Probe now button
// (POST, CSRF-protected) that makes the probe due now and wakes the
// webhook's lane; a read-only user sees the banner but no button and may
// not post it; a closed breaker shows no banner, and a late Probe now
// says the endpoint is not on hold any more.
func TestWebhookPage_BreakerBannerAndProbeNow(t *testing.T) {
	waker := &recordingWaker{}
	tu := newTestUI(t, withRecordedDeliveries(t), withIncidents(t, waker))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	writer := tu.mustCreateUser(t, acct, "developer", "account_admin")
	sub := tu.mustCreateSub(t, acct.ID, "Orders sync", "https://hooks.example.com/runs")
	tu.openBreaker(t, sub.ID, 3, "3 minutes")
	tu.ingest(t, acct.ID, 4)
	path := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", acct.ID, sub.ID)

	b := tu.newBrowser(t)
	b.mustSignIn(writer.Token)
	p := b.get(path)
	requireCode(t, p, http.StatusOK)
	requireContains(t, p, `id="breaker-banner"`, "Deliveries are on hold", ">5 min ago</time>", ">in 3 min</time>",
		`id="breaker-backlog">4<`, `id="breaker-failed-probes">3<`, `action="`+path+`/breaker/probe"`, ">Probe now</button>")

	// Without the CSRF token nothing happens.
	refused := b.post(path+"/breaker/probe", url.Values{})
	requireCode(t, refused, http.StatusForbidden)
	if due := probeDue(t, tu, sub.ID); due || len(waker.woken()) != 0 {
		t.Fatalf("a probe without CSRF changed something: due %v, woken %v", due, waker.woken())
	}

	probed := b.post(path+"/breaker/probe", url.Values{"csrf_token": {csrfOf(t, p)}})
	requireRedirect(t, probed, path+"?done=probing")
	if !probeDue(t, tu, sub.ID) {
		t.Error("Probe now did not make the probe due")
	}
	want := deliveries.RoutedWebhook{SubscriptionID: sub.ID, AccountID: acct.ID, Route: deliveries.RouteOwn}
	if got := waker.woken(); len(got) != 1 || got[0] != want {
		t.Errorf("woken = %+v, want the webhook's own lane %+v", got, want)
	}
	requireContains(t, b.get(probed.Location), "The probe goes now", `id="breaker-next-probe">due now<`)

	// A read-only user sees the state, not the button, and may not probe.
	reader := tu.mustCreateUser(t, acct, "read_only", "read_only")
	rb := tu.newBrowser(t)
	rb.mustSignIn(reader.Token)
	rp := rb.get(path)
	requireContains(t, rp, `id="breaker-banner"`, `id="breaker-backlog">4<`)
	requireNotContains(t, rp, "Probe now")
	requireCode(t, rb.post(path+"/breaker/probe", url.Values{"csrf_token": {csrfOf(t, rp)}}), http.StatusForbidden)

	// Closed: no banner; a Probe now from a stale page says so.
	if _, err := tu.DB.Pool.Exec(context.Background(), `UPDATE webhook_subscriptions SET delivery_route = 'own',
		breaker_opened_at = NULL, breaker_next_probe_at = NULL, breaker_closed_at = now() WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	closed := b.get(path)
	requireNotContains(t, closed, "breaker-banner", "Probe now")
	late := b.post(path+"/breaker/probe", url.Values{"csrf_token": {csrfOf(t, closed)}})
	requireRedirect(t, late, path+"?done=breaker-closed")
	requireContains(t, b.get(late.Location), "The endpoint is not on hold any more")
	if len(waker.woken()) != 1 {
		t.Errorf("a probe of a closed breaker woke %v", waker.woken())
	}

	// Another account's webhook is not found, for its pages and its probe.
	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	stranger := tu.mustCreateUser(t, other, "developer", "account_admin")
	sb := tu.newBrowser(t)
	sb.mustSignIn(stranger.Token)
	otherPath := fmt.Sprintf("/ui/accounts/%d/webhooks/%s", other.ID, sub.ID)
	list := sb.get(fmt.Sprintf("/ui/accounts/%d/webhooks", other.ID))
	requireCode(t, sb.post(otherPath+"/breaker/probe", url.Values{"csrf_token": {csrfOf(t, list)}}), http.StatusNotFound)
}

// probeDue says whether the webhook's next probe is due.
func probeDue(t *testing.T, tu *testUI, webhookID string) bool {
	t.Helper()
	var due bool
	if err := tu.DB.Pool.QueryRow(context.Background(),
		`SELECT COALESCE(breaker_next_probe_at <= now(), false) FROM webhook_subscriptions WHERE id = $1`, webhookID).Scan(&due); err != nil {
		t.Fatal(err)
	}
	return due
}

// TestWebhookList_OpenBreakerAndNotices: the webhooks list marks a
// webhook whose breaker is open, and lists the account's notices of the
// last 7 days (older ones and other accounts' are left out).
func TestWebhookList_OpenBreakerAndNotices(t *testing.T) {
	tu := newTestUI(t, withRecordedDeliveries(t), withIncidents(t, &recordingWaker{}))
	acct := tu.mustCreateAccount(t, webhooks.PlanTeam)
	user := tu.mustCreateUser(t, acct, "read_only", "member")
	down := tu.mustCreateSub(t, acct.ID, "Orders sync", "https://hooks.example.com/orders")
	fine := tu.mustCreateSub(t, acct.ID, "Billing", "https://hooks.example.com/billing")
	tu.openBreaker(t, down.ID, 0, "1 minute")
	other := tu.mustCreateAccount(t, webhooks.PlanTeam)
	theirs := tu.mustCreateSub(t, other.ID, "Their webhook", "https://hooks.example.com/theirs")

	store := incidents.NewStore(tu.DB.Pool)
	notice := func(accountID int64, sub webhooks.Subscription, kind string, ago time.Duration, status string, code int) {
		t.Helper()
		id := webhooks.NewID(webhooks.NoticeIDPrefix)
		if _, err := store.CreateNotice(t.Context(), incidents.Notice{ID: id, AccountID: accountID, SubscriptionID: sub.ID,
			Kind: kind, IncidentStartedAt: time.Now().Add(-ago), Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if status != "" {
			if err := store.RecordNoticeAttempt(t.Context(), id, status, code, ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tu.DB.Pool.Exec(t.Context(), `UPDATE account_notices SET created_at = now() - $2 * interval '1 second' WHERE id = $1`,
			id, ago.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	notice(acct.ID, down, webhooks.NoticeBreakerOpened, time.Hour, "delivered", 204)
	notice(acct.ID, fine, webhooks.NoticeRecovered, 2*time.Hour, "failed", 502)
	notice(acct.ID, fine, webhooks.NoticeDisabled, 3*time.Hour, "no_endpoint", 0)
	notice(acct.ID, fine, webhooks.NoticeBreakerOpened, 8*24*time.Hour, "delivered", 200) // too old
	notice(other.ID, theirs, webhooks.NoticeDisabled, time.Hour, "", 0)

	b := tu.newBrowser(t)
	b.mustSignIn(user.Token)
	p := b.get(fmt.Sprintf("/ui/accounts/%d/webhooks", acct.ID))
	requireCode(t, p, http.StatusOK)
	if n := strings.Count(p.Body, "On hold: endpoint down"); n != 1 {
		t.Errorf("%d webhooks are marked on hold, want 1", n)
	}
	row := p.Body[strings.Index(p.Body, ">Orders sync<"):]
	if i := strings.Index(row, "</tr>"); i < 0 || !strings.Contains(row[:i], "On hold: endpoint down") {
		t.Errorf("the held webhook's row has no marker")
	}
	requireContains(t, p, `id="notices"`, "Deliveries on hold", "sent to your notification endpoint",
		"Recovered", "your notification endpoint did not take it (HTTP 502)",
		"Deactivated automatically", "not sent: no notification endpoint was set", "/notification-endpoint")
	notices := p.Body[strings.Index(p.Body, `id="notices"`):]
	notices = notices[:strings.Index(notices, "</ul>")]
	if n := strings.Count(notices, "<li>"); n != 3 {
		t.Errorf("%d notices listed, want the 3 of the last 7 days:\n%s", n, notices)
	}
	if strings.Contains(notices, "Their webhook") {
		t.Error("another account's notice is listed")
	}
	if i, j := strings.Index(notices, "Deliveries on hold"), strings.Index(notices, "Recovered"); i > j {
		t.Error("notices are not newest first")
	}
}
