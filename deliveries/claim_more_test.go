package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestClaimShared_SaysWhetherItLeftDueDeliveriesBehind: a claim that took
// every due delivery says there is no more; one whose page, or a
// webhook's or destination's room, held some back says there is, so the
// round claims again as soon as room frees.
func TestClaimShared_SaysWhetherItLeftDueDeliveriesBehind(t *testing.T) {
	tests := []struct {
		name      string
		due       int // deliveries due to the one webhook
		limit     int // the page
		room      int // the webhook's room (0: the default, 16)
		destRoom  int // the destination's room (0: the default, 16)
		wantTaken int
		wantMore  bool
	}{
		{name: "nothing due", due: 0, limit: 50, wantTaken: 0, wantMore: false},
		{name: "all that was due", due: 3, limit: 50, wantTaken: 3, wantMore: false},
		{name: "the page held some back", due: 5, limit: 2, wantTaken: 2, wantMore: true},
		{name: "the webhook's room held some back", due: 5, limit: 50, room: 2, wantTaken: 2, wantMore: true},
		{name: "a webhook at its limit", due: 2, limit: 50, room: -1, wantTaken: 0, wantMore: true},
		{name: "the destination's room held some back", due: 5, limit: 50, destRoom: 3, wantTaken: 3, wantMore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRouteFixture(t)
			id := f.webhook(t)
			if tt.due > 0 {
				f.ingest(t, id, tt.due)
			}
			claim := deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 50, PerWebhook: 16, PerDestination: 16,
				Limit: tt.limit, Lease: time.Minute, WorkflowID: "shard"}
			switch {
			case tt.room > 0:
				claim.Rooms = map[string]int{id: tt.room}
			case tt.room < 0:
				claim.Rooms = map[string]int{id: 0}
			}
			if tt.destRoom > 0 {
				var dest string
				if err := f.pool.QueryRow(t.Context(), `SELECT destination_key FROM webhook_subscriptions WHERE id = $1`, id).Scan(&dest); err != nil {
					t.Fatal(err)
				}
				claim.DestinationRooms = map[string]int{dest: tt.destRoom}
			}
			page, err := f.store.ClaimShared(t.Context(), claim)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Claimed) != tt.wantTaken || page.More != tt.wantMore {
				t.Errorf("took %d, more %v; want %d, more %v", len(page.Claimed), page.More, tt.wantTaken, tt.wantMore)
			}
		})
	}
}
