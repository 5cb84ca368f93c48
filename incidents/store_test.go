package incidents_test

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

type storeFixture struct {
	db      *testenv.Database
	store   *incidents.Store
	account webhooks.Account
	sub     webhooks.Subscription
}

func newStoreFixture(t *testing.T) *storeFixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "incidents", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := subscriptions.NewStore(db.Pool, box).Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Orders sync", ClientURL: "https://93.184.215.14/hooks",
		EventTypes: []string{webhooks.EventRunCompleted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &storeFixture{db: db, store: incidents.NewStore(db.Pool), account: acct, sub: sub}
}

// closedBreaker writes the columns the delivery core leaves when a breaker
// closed closedAgo ago: closed, the incident started 5 minutes ago still
// going (the quiet period).
func (f *storeFixture) closedBreaker(t *testing.T, closedAgo time.Duration) {
	t.Helper()
	tag, err := f.db.Pool.Exec(t.Context(), `
		UPDATE webhook_subscriptions
		SET breaker_opened_at = NULL, breaker_closed_at = now() - $2 * interval '1 second',
		    incident_started_at = now() - interval '5 minutes', incident_announced_at = NULL
		WHERE id = $1`, f.sub.ID, closedAgo.Seconds())
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("close the breaker of %s: %v (%d rows)", f.sub.ID, err, tag.RowsAffected())
	}
}

// TestIncident_AnnouncedOnceEndedAfterTheQuietPeriod: an incident is
// announced once, and ends only when its breaker stayed closed for the
// quiet period, saying it was announced.
func TestIncident_AnnouncedOnceEndedAfterTheQuietPeriod(t *testing.T) {
	f := newStoreFixture(t)
	if _, err := f.store.Incident(t.Context(), f.sub.ID); !errors.Is(err, incidents.ErrNoIncidentEnded) {
		t.Fatalf("Incident without one: %v, want ErrNoIncidentEnded", err)
	}
	if _, err := f.store.EndIncident(t.Context(), f.sub.ID, 0); !errors.Is(err, incidents.ErrNoIncidentEnded) {
		t.Fatalf("EndIncident without one: %v, want ErrNoIncidentEnded", err)
	}
	f.closedBreaker(t, time.Minute)
	inc, err := f.store.Incident(t.Context(), f.sub.ID)
	if err != nil || inc.AccountID != f.account.ID || inc.WebhookName != "Orders sync" || inc.StartedAt.IsZero() {
		t.Fatalf("Incident: %+v (err %v)", inc, err)
	}
	announced, err := f.store.AnnounceIncident(t.Context(), f.sub.ID)
	if err != nil || !announced.StartedAt.Equal(inc.StartedAt) || announced.ClientURL != f.sub.ClientURL {
		t.Fatalf("AnnounceIncident: %+v (err %v), want %+v", announced, err, inc)
	}
	if _, err := f.store.AnnounceIncident(t.Context(), f.sub.ID); !errors.Is(err, incidents.ErrNoIncidentEnded) {
		t.Errorf("AnnounceIncident again: %v, want ErrNoIncidentEnded", err)
	}
	if _, err := f.store.EndIncident(t.Context(), f.sub.ID, time.Hour); !errors.Is(err, incidents.ErrNoIncidentEnded) {
		t.Errorf("EndIncident within the quiet period: %v, want ErrNoIncidentEnded", err)
	}
	ended, err := f.store.EndIncident(t.Context(), f.sub.ID, 30*time.Second)
	if err != nil || !ended.Announced || !ended.Incident.StartedAt.Equal(inc.StartedAt) {
		t.Errorf("EndIncident after the quiet period: %+v (err %v), want ended, announced", ended, err)
	}
	if _, err := f.store.Incident(t.Context(), f.sub.ID); !errors.Is(err, incidents.ErrNoIncidentEnded) {
		t.Errorf("Incident after it ended: %v, want ErrNoIncidentEnded", err)
	}
}

// TestNotices_OncePerIncidentAndKind: a notice is stored once per webhook,
// kind and incident; its attempts are recorded and the account's list is
// newest first.
func TestNotices_OncePerIncidentAndKind(t *testing.T) {
	f := newStoreFixture(t)
	started := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	notice := func(id, kind string) incidents.Notice {
		return incidents.Notice{ID: id, AccountID: f.account.ID, SubscriptionID: f.sub.ID, Kind: kind,
			IncidentStartedAt: started, Payload: []byte(`{"n":"` + id + `"}`)}
	}
	since := time.Now().Add(-time.Minute)
	for _, c := range []struct {
		n       incidents.Notice
		created bool
	}{
		{notice("ntc_opened", webhooks.NoticeBreakerOpened), true},
		{notice("ntc_opened_again", webhooks.NoticeBreakerOpened), false},
		{notice("ntc_recovered", webhooks.NoticeRecovered), true},
	} {
		if created, err := f.store.CreateNotice(t.Context(), c.n); err != nil || created != c.created {
			t.Fatalf("CreateNotice %s: created %v (err %v), want %v", c.n.ID, created, err, c.created)
		}
	}
	if n, err := f.store.RecentNotices(t.Context(), f.account.ID, since); err != nil || n != 2 {
		t.Errorf("RecentNotices: %d (err %v), want 2", n, err)
	}
	if _, err := f.store.Notice(t.Context(), "ntc_opened_again"); !errors.Is(err, incidents.ErrNoNotice) {
		t.Errorf("Notice of the duplicate: %v, want ErrNoNotice", err)
	}
	if err := f.store.RecordNoticeAttempt(t.Context(), "ntc_opened", "delivered", 204, ""); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Notice(t.Context(), "ntc_opened")
	if err != nil || got.Status != "delivered" || got.AttemptCount != 1 || string(got.Payload) != `{"n":"ntc_opened"}` {
		t.Errorf("Notice: %+v (err %v), want delivered after 1 attempt", got, err)
	}
	list, err := f.store.Notices(t.Context(), f.account.ID, 10)
	if err != nil || len(list) != 2 || list[0].ID != "ntc_recovered" || list[1].LastStatusCode != 204 || list[1].WebhookName != "Orders sync" {
		t.Errorf("Notices: %+v (err %v), want ntc_recovered then ntc_opened (204)", list, err)
	}
}

// TestIncidentsDue_ListsOnlyIncidentsDueAStep: the sweeper follows a
// webhook's incident when an open breaker's incident is old enough to
// announce (and was not announced), or when its breaker stayed closed for
// the quiet period; nothing else.
func TestIncidentsDue_ListsOnlyIncidentsDueAStep(t *testing.T) {
	f := newStoreFixture(t)
	const noticeAfter, quiet = 10 * time.Minute, 5 * time.Minute
	tests := []struct {
		name string
		// minutes ago, or 0 for NULL
		openedAgo, closedAgo, startedAgo, announcedAgo int
		want                                           bool
	}{
		{"NoIncident", 0, 0, 0, 0, false},
		{"OpenNotOldEnough", 9, 0, 9, 0, false},
		{"OpenOldEnough", 11, 0, 11, 0, true},
		{"OpenAnnounced", 30, 0, 30, 20, false},
		{"ClosedWithinTheQuietPeriod", 0, 4, 30, 20, false},
		{"ClosedForTheQuietPeriod", 0, 6, 30, 20, true},
		{"ClosedForTheQuietPeriodNeverAnnounced", 0, 6, 8, 0, true},
	}
	ago := func(m int) any {
		if m == 0 {
			return nil
		}
		return time.Now().Add(-time.Duration(m) * time.Minute)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.db.Pool.Exec(t.Context(), `
				UPDATE webhook_subscriptions
				SET breaker_opened_at = $2, breaker_closed_at = $3, incident_started_at = $4, incident_announced_at = $5
				WHERE id = $1`, f.sub.ID, ago(tt.openedAgo), ago(tt.closedAgo), ago(tt.startedAgo), ago(tt.announcedAgo)); err != nil {
				t.Fatal(err)
			}
			ids, err := f.store.IncidentsDue(t.Context(), noticeAfter, quiet, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ids) == 1 && ids[0] == f.sub.ID; got != tt.want || len(ids) > 1 {
				t.Errorf("IncidentsDue: %v, want %s listed: %v", ids, f.sub.ID, tt.want)
			}
		})
	}
}
