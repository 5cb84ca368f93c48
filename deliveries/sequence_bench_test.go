package deliveries_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// BenchmarkIngestEvents_OneBusyWebhook ingests every event to one webhook
// (for every job), by one sender or by several concurrent statements (the
// group committers of several API processes), in groups of 1 (a quiet
// hour) and 100 (a group commit under load). Every statement of a round
// numbers deliveries of the same webhook: what the sequence costs is the
// counter row they all update. Run:
//
//	go test -run '^$' -bench IngestEvents_OneBusyWebhook -benchtime 200x -count 3 ./deliveries/
func BenchmarkIngestEvents_OneBusyWebhook(b *testing.B) {
	db := testenv.NewDatabase(b)
	ctx := b.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "busy", webhooks.PlanTeam)
	if err != nil {
		b.Fatal(err)
	}
	loadWebhooks(b, db.Pool, a.ID, 0, 1)
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	store := deliveries.NewStore(db.Pool)
	var next atomic.Int64
	for _, senders := range []int{1, 4} {
		for _, group := range []int{1, 100} {
			b.Run(fmt.Sprintf("Senders=%d/Group=%d", senders, group), func(b *testing.B) {
				events := 0
				for b.Loop() {
					var wg sync.WaitGroup
					for range senders {
						evs := make([]deliveries.NewEvent, group)
						for j := range evs {
							evs[j] = deliveries.NewEvent{ID: fmt.Sprintf("wev_busy%d", next.Add(1)), AccountID: a.ID,
								Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1", ToolName: "bench"}
						}
						wg.Go(func() {
							if _, lanes, err := store.IngestEvents(ctx, evs); err != nil || len(lanes) != 1 {
								b.Errorf("lanes %d, err %v: want the one webhook", len(lanes), err)
							}
						})
					}
					wg.Wait()
					events += senders * group
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
