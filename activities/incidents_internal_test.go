package activities

import (
	"log/slog"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// TestFollowIncidents_TellsTheIncidentOfAWebhookWithoutALane: a webhook
// whose breaker opened on on_outage "retry" stays on its shard, so the
// sweeper follows its incident: announced once it is older than
// NoticeAfter (one breaker_opened notice, not again at the next sweep),
// ended once its breaker stayed closed for Quiet (one recovered notice).
func TestFollowIncidents_TellsTheIncidentOfAWebhookWithoutALane(t *testing.T) {
	db := testenv.NewDatabase(t)
	box := testBox(t)
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "incidents", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := subscriptions.NewStore(db.Pool, box).Create(t.Context(), webhooks.Subscription{AccountID: acct.ID, Name: "hook",
		ClientURL: "https://example.com/hook", EventTypes: []string{webhooks.EventRunCompleted}, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	store, notices := deliveries.NewStore(db.Pool), incidents.NewStore(db.Pool)
	acts := New(Deps{
		Store: store, IncidentStore: notices, Box: box, Logger: slog.New(slog.DiscardHandler), Waker: &recordingWaker{},
		Incidents: IncidentPolicy{NoticeAfter: 10 * time.Minute, Quiet: 5 * time.Minute},
		Schedule:  deliveries.Schedule{Initial: time.Second, Coefficient: 2, Max: time.Minute}, AttemptTimeout: 5 * time.Second,
	})
	set := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET `+sql+` WHERE id = $1`, sub.ID); err != nil {
			t.Fatal(err)
		}
	}
	follow := func(want int) {
		t.Helper()
		if n, err := acts.Maintenance.FollowIncidents(t.Context()); err != nil || n != want {
			t.Fatalf("FollowIncidents: %d (err %v), want %d", n, err, want)
		}
	}
	kinds := func() []string {
		t.Helper()
		list, err := notices.Notices(t.Context(), acct.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range list {
			out = append(out, n.Kind)
		}
		return out
	}

	set(`breaker_opened_at = now() - interval '9 minutes', incident_started_at = now() - interval '9 minutes'`)
	follow(0)
	set(`breaker_opened_at = now() - interval '11 minutes', incident_started_at = now() - interval '11 minutes'`)
	follow(1)
	if got := kinds(); len(got) != 1 || got[0] != webhooks.NoticeBreakerOpened {
		t.Fatalf("notices %v, want one %s", got, webhooks.NoticeBreakerOpened)
	}
	follow(0) // announced: nothing due until the breaker closes

	set(`breaker_opened_at = NULL, breaker_closed_at = now() - interval '4 minutes'`)
	follow(0)
	set(`breaker_closed_at = now() - interval '6 minutes'`)
	follow(1)
	if got := kinds(); len(got) != 2 || got[0] != webhooks.NoticeRecovered {
		t.Fatalf("notices %v, want %s then %s", got, webhooks.NoticeBreakerOpened, webhooks.NoticeRecovered)
	}
	st, err := store.Breaker(t.Context(), sub.ID)
	if err != nil || st.IncidentStartedAt != nil || st.Route != deliveries.RouteShared {
		t.Errorf("breaker %+v (err %v), want the incident over, the webhook still shared", st, err)
	}
	follow(0)
}
