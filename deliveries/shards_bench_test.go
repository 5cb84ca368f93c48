package deliveries_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// BenchmarkShardStatements times the statements a delivery costs in the
// database, per delivery, for events concentrated on one webhook and
// spread over 2,000 (each to its own): the ingestion (groups of 32), the
// claims of 8 shards (pages of up to 200, or of 8 as under a trickle of
// events; candidates per lane key as given) and the records of the pages.
// Each event is a run's job.run.completed, so every claim judges per-run
// order (a probe per candidate, which must not scan the webhook's backlog).
// DestinationRoom=16 claims as a round does while the account's one host
// is at its in-flight limit: 16 may start, 32 webhooks are in flight, and
// most candidates are judged only to wait.
// Run:
//
//	go test -run '^$' -bench ShardStatements -benchtime 3x ./deliveries/
func BenchmarkShardStatements(b *testing.B) {
	db := testenv.NewDatabase(b)
	ctx := b.Context()
	ids := identity.NewStore(db.Pool)
	account := func(name string, webhooksN int) int64 {
		a, err := ids.CreateAccount(ctx, name, webhooks.PlanTeam)
		if err != nil {
			b.Fatal(err)
		}
		loadWebhooks(b, db.Pool, a.ID, webhooksN, 0)
		return a.ID
	}
	one, spread := account("one", 1), account("spread", 2000)
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	store := deliveries.NewStore(db.Pool)
	inFlightRooms := map[string]int{}
	for i := range 32 {
		inFlightRooms[fmt.Sprintf("wsu_load%d_%d", spread, 1990+i)] = 1
	}
	var next atomic.Int64
	const events, group = 2000, 32
	for _, tc := range []struct {
		name    string
		account int64
		job     func(i int) string
		page    int
		perKey  int
		// destRoom, when set, bounds the account's destination per claim.
		destRoom int
	}{
		{"Concentrated/Page=200/PerKey=200", one, func(int) string { return "1" }, 200, 200, 0},
		{"Concentrated/Page=200/PerKey=13", one, func(int) string { return "1" }, 200, 13, 0},
		{"Spread/Page=200/PerKey=200", spread, func(i int) string { return strconv.Itoa(i%2000 + 1) }, 200, 200, 0},
		{"Spread/Page=200/PerKey=13", spread, func(i int) string { return strconv.Itoa(i%2000 + 1) }, 200, 13, 0},
		{"Spread/Page=8/PerKey=8", spread, func(i int) string { return strconv.Itoa(i%2000 + 1) }, 8, 8, 0},
		{"Spread/Page=8/PerKey=1", spread, func(i int) string { return strconv.Itoa(i%2000 + 1) }, 8, 1, 0},
		{"Spread/Page=200/PerKey=200/DestinationRoom=16", spread, func(i int) string { return strconv.Itoa(i%2000 + 1) }, 200, 200, 16},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var ingest, claimed, record time.Duration
			var delivered, claims int
			for b.Loop() {
				for g := 0; g < events; g += group {
					evs := make([]deliveries.NewEvent, group)
					for j := range evs {
						evs[j] = deliveries.NewEvent{ID: fmt.Sprintf("wev_sbench%d", next.Add(1)), AccountID: tc.account,
							Type: webhooks.EventRunCompleted, JobID: tc.job(g + j), RunID: strconv.FormatInt(next.Load(), 10),
							ToolName: "bench"}
					}
					start := time.Now()
					if _, _, err := store.IngestEvents(ctx, evs); err != nil {
						b.Fatal(err)
					}
					ingest += time.Since(start)
				}
				// The statistics autovacuum keeps of a busy table.
				if _, err := db.Pool.Exec(ctx, "ANALYZE webhook_deliveries, webhook_events"); err != nil {
					b.Fatal(err)
				}
				for shard := 0; shard < 8; {
					claim := deliveries.SharedClaim{Shard: shard, Shards: 8, PerKey: tc.perKey,
						PerWebhook: tc.page, Limit: tc.page, Lease: time.Minute, WorkflowID: "bench", WorkflowRunID: "bench"}
					if tc.destRoom > 0 {
						claim.DestinationRooms = map[string]int{deliveries.DestinationKey(tc.account, "https://example.com/"): tc.destRoom}
						claim.Rooms = inFlightRooms
					}
					start := time.Now()
					page, err := store.ClaimShared(ctx, claim)
					if err != nil {
						b.Fatal(err)
					}
					claimed += time.Since(start)
					claims++
					if len(page.Claimed) == 0 {
						shard++
						continue
					}
					recs := make([]deliveries.AttemptRecord, len(page.Claimed))
					for i, c := range page.Claimed {
						recs[i] = deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: c.Webhook.ID, AttemptNumber: c.Attempt,
							StartedAt: time.Now(), Duration: time.Millisecond, StatusCode: 200, Status: deliveries.StatusSucceeded,
							Body: deliveries.FixedBody{Payload: []byte(`{}`)}}
					}
					start = time.Now()
					if _, err := store.RecordAttempts(ctx, recs, deliveries.RecordPolicy{}); err != nil {
						b.Fatal(err)
					}
					record += time.Since(start)
					delivered += len(recs)
				}
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(delivered, 1)) }
			b.ReportMetric(per(ingest), "ingest-µs/delivery")
			b.ReportMetric(per(claimed), "claim-µs/delivery")
			b.ReportMetric(per(record), "record-µs/delivery")
			b.ReportMetric(float64(claimed.Microseconds())/float64(max(claims, 1)), "µs/claim")
		})
	}
}
