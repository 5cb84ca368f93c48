package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDestinationKey_AgreesWithTheDatabase: the worker's limiter and the
// claim group webhooks by the same destination, so the key Go works out
// from a client_url is the one migration 00024 stores for it.
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
	} {
		var stored string
		if err := f.pool.QueryRow(t.Context(),
			`UPDATE webhook_subscriptions SET client_url = $2 WHERE id = $1 RETURNING destination_key`, id, url).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if want := deliveries.DestinationKey(f.account.ID, url); stored != want {
			t.Errorf("%s: stored %q, Go %q", url, stored, want)
		}
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
