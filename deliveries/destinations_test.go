package deliveries_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestDestinationKey_AgreesWithTheDatabase: the worker's limiter and the
// claim group webhooks by the same destination, so the key Go works out
// from a client_url is the one migration 00024 stores for it; and the
// lane key stored beside it (migration 00041) is LaneKey of that key and
// the webhook's id.
func TestDestinationKey_AgreesWithTheDatabase(t *testing.T) {
	f := newRouteFixture(t)
	id := f.webhook(t)
	for _, url := range []string{
		"https://hooks.example.com/a",
		"HTTPS://Hooks.Example.COM:8443/a/b?c=d#e",
		"http://127.0.0.1:9000",
		"https://[2001:db8::1]:443/x",
		"https://user:pass@example.com/path",
		"https://example.com?query",
		"https://example.com",
		"http://Example.com:80/x",
		"ftp://example.com/x",
		"not a url",
	} {
		var stored string
		var laneKey int
		if err := f.pool.QueryRow(t.Context(),
			`UPDATE webhook_subscriptions SET client_url = $2 WHERE id = $1 RETURNING destination_key, lane_key`, id, url).Scan(&stored, &laneKey); err != nil {
			t.Fatal(err)
		}
		want := deliveries.DestinationKey(f.account.ID, url)
		if stored != want {
			t.Errorf("%s: stored %q, Go %q", url, stored, want)
		}
		if wantKey := deliveries.LaneKey(want, id); laneKey != wantKey {
			t.Errorf("%s: stored lane key %#x, Go %#x", url, laneKey, wantKey)
		}
	}
}

// TestDestinationKey_OneDestinationWhateverThePortAsWritten: a client_url
// with its scheme's default port written out and one without name the
// same destination, for the claim and the limiter alike (on 564477e the
// claim kept the port as written: two destinations, each with its room).
func TestDestinationKey_OneDestinationWhateverThePortAsWritten(t *testing.T) {
	for _, pair := range [][2]string{
		{"https://h.example.com/a", "https://H.example.com:443/b"},
		{"http://h.example.com", "http://h.example.com:80/"},
		{"https://user@h.example.com/a", "https://h.example.com/b"},
	} {
		if a, b := deliveries.DestinationKey(1, pair[0]), deliveries.DestinationKey(1, pair[1]); a != b {
			t.Errorf("%s is %q and %s is %q, want one destination", pair[0], a, pair[1], b)
		}
	}
	if a, b := deliveries.DestinationKey(1, "https://h.example.com"), deliveries.DestinationKey(2, "https://h.example.com"); a == b {
		t.Errorf("two accounts share destination %q", a)
	}
}

// TestClaimShared_BoundsADestinationByItsRoom: an account's webhooks at
// one host (whatever the case of its name or their paths) share the
// destination's room; a webhook at another host does not.
func TestClaimShared_BoundsADestinationByItsRoom(t *testing.T) {
	f := newRouteFixture(t)
	urls := map[string]string{
		f.webhook(t): "https://Hooks.Example.com:8443/a",
		f.webhook(t): "https://hooks.example.com:8443/b?x=1",
		f.webhook(t): "https://other.example.com/c",
	}
	var other string
	for id, url := range urls {
		if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET client_url = $2 WHERE id = $1`, id, url); err != nil {
			t.Fatal(err)
		}
		f.ingest(t, id, 3)
		if url == "https://other.example.com/c" {
			other = id
		}
	}
	shared := deliveries.DestinationKey(f.account.ID, "https://hooks.example.com:8443/")
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
		Limit: 50, Lease: time.Minute, WorkflowID: "shard", DestinationRooms: map[string]int{shared: 2}})
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]int{}
	for _, c := range page.Claimed {
		taken[c.Webhook.ID]++
	}
	if got := len(page.Claimed) - taken[other]; got != 2 {
		t.Errorf("took %d deliveries of the two webhooks at hooks.example.com:8443, want its room 2", got)
	}
	if taken[other] != 3 {
		t.Errorf("took %d of the webhook at another host, want all 3", taken[other])
	}
}

// TestClaimShared_ABusyWebhookHidesNoOtherOfItsKey: a webhook with more due
// than a claim's window of its lane key, at its in-flight limit, does not
// hide a quiet webhook of the same key: the claim finds the key's other
// webhooks and takes the quiet one's delivery, also among thousands of
// webhooks at one destination (about 250 a key) with nothing queued.
func TestClaimShared_ABusyWebhookHidesNoOtherOfItsKey(t *testing.T) {
	for _, webhookCount := range []int{100, 4000} {
		t.Run(fmt.Sprint(webhookCount), func(t *testing.T) {
			db := testenv.NewDatabase(t)
			ctx := t.Context()
			a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "keys", webhooks.PlanTeam)
			if err != nil {
				t.Fatal(err)
			}
			loadWebhooks(t, db.Pool, a.ID, webhookCount, 0) // webhook g is for job g
			var busy, quiet string
			if err := db.Pool.QueryRow(ctx, `SELECT min(id), max(id) FROM webhook_subscriptions WHERE lane_key = (
				SELECT lane_key FROM webhook_subscriptions GROUP BY lane_key HAVING count(*) >= 2 ORDER BY lane_key LIMIT 1)`).
				Scan(&busy, &quiet); err != nil {
				t.Fatal(err)
			}
			job := func(id string) string { return id[strings.LastIndex(id, "_")+1:] }
			store := deliveries.NewStore(db.Pool)
			ingest := func(id string, n int) {
				t.Helper()
				evs := make([]deliveries.NewEvent, n)
				for i := range evs {
					evs[i] = deliveries.NewEvent{ID: fmt.Sprintf("wev_%s_%d", id, i), AccountID: a.ID, Type: webhooks.EventRunCompleted,
						JobID: job(id), ToolName: "dbt"}
				}
				if _, _, err := store.IngestEvents(ctx, evs); err != nil {
					t.Fatal(err)
				}
			}
			ingest(busy, 80)
			ingest(quiet, 1) // due after the busy webhook's 80
			page, err := store.ClaimShared(ctx, deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
				Limit: 50, Lease: time.Minute, WorkflowID: "shard", Rooms: map[string]int{busy: 0}})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Claimed) != 1 || page.Claimed[0].Webhook.ID != quiet {
				ids := make([]string, len(page.Claimed))
				for i, c := range page.Claimed {
					ids[i] = c.Webhook.ID
				}
				t.Fatalf("claimed the deliveries of %v; want only the quiet webhook %s's (the busy %s is at its limit)", ids, quiet, busy)
			}
		})
	}
}

// TestClaimShared_ABusyDestinationHidesNoOtherOfItsKey: one account's
// destination with a backlog over many webhooks (a spread burst to a host
// that takes few at once) does not hide another account's delivery at
// another host whose webhook shares a lane key with them: the claim's look
// beside a full window passes over the webhooks of a destination the
// window already fills to its room, and finds the other account's.
func TestClaimShared_ABusyDestinationHidesNoOtherOfItsKey(t *testing.T) {
	for _, room := range []int{0, 5} {
		t.Run(fmt.Sprintf("room=%d", room), func(t *testing.T) {
			db := testenv.NewDatabase(t)
			ctx := t.Context()
			ids := identity.NewStore(db.Pool)
			busy, err := ids.CreateAccount(ctx, "busy", webhooks.PlanTeam)
			if err != nil {
				t.Fatal(err)
			}
			other, err := ids.CreateAccount(ctx, "other", webhooks.PlanTeam)
			if err != nil {
				t.Fatal(err)
			}
			const busyWebhooks = 1600 // about 100 a lane key of its destination's 16
			loadWebhooks(t, db.Pool, busy.ID, busyWebhooks, 0)
			loadWebhooks(t, db.Pool, other.ID, 1, 0)
			busyDest := deliveries.DestinationKey(busy.ID, "https://example.com/")
			otherID := fmt.Sprintf("wsu_load%d_1", other.ID)
			bucket := deliveries.LaneKey(busyDest, "any") &^ 15
			var url string
			for i := 0; url == ""; i++ { // a host of the other account's in the busy destination's keys
				u := fmt.Sprintf("https://h%d.example.net/", i)
				if deliveries.LaneKey(deliveries.DestinationKey(other.ID, u), otherID)&^15 == bucket {
					url = u
				}
			}
			if _, err := db.Pool.Exec(ctx, `UPDATE webhook_subscriptions SET client_url = $2 WHERE id = $1`, otherID, url); err != nil {
				t.Fatal(err)
			}
			store := deliveries.NewStore(db.Pool)
			for lo := 1; lo <= busyWebhooks; lo += 200 { // one due delivery for each of the busy account's webhooks
				evs := make([]deliveries.NewEvent, 0, 200)
				for job := lo; job < lo+200; job++ {
					evs = append(evs, deliveries.NewEvent{ID: fmt.Sprintf("wev_busy_%d", job), AccountID: busy.ID,
						Type: webhooks.EventRunCompleted, JobID: fmt.Sprint(job), ToolName: "dbt"})
				}
				if _, _, err := store.IngestEvents(ctx, evs); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := store.IngestEvents(ctx, []deliveries.NewEvent{{ID: "wev_other", AccountID: other.ID,
				Type: webhooks.EventRunCompleted, JobID: "1", ToolName: "dbt"}}); err != nil {
				t.Fatal(err)
			}
			page, err := store.ClaimShared(ctx, deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16,
				Limit: 50, Lease: time.Minute, WorkflowID: "shard", DestinationRooms: map[string]int{busyDest: room}})
			if err != nil {
				t.Fatal(err)
			}
			var busyTaken, otherTaken int
			for _, c := range page.Claimed {
				if c.Webhook.ID == otherID {
					otherTaken++
				} else {
					busyTaken++
				}
			}
			if otherTaken != 1 || busyTaken != room {
				t.Fatalf("claimed %d of the other account's delivery and %d of the busy destination's; want 1 and its room %d",
					otherTaken, busyTaken, room)
			}
		})
	}
}
