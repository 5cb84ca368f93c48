package deliveries_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// benchGroup is how many events each IngestEvents statement of the
// benchmark stores, a group commit under load.
const benchGroup = 100

// BenchmarkIngestEvents_Matching ingests groups of events to accounts of
// one webhook and of 10,000 (each for its own job), so the cost of
// matching can be compared per event: concentrated on one job, spread
// over every job, skewed (nine in ten to one job), and fanned out to ten
// webhooks for every job besides. Besides elapsed time, it reports the
// CPU time the database's process and this one spent per event, which
// vary less on a busy machine. Run:
//
//	go test -run '^$' -bench IngestEvents_Matching -benchtime 50x -count 2 ./deliveries/
func BenchmarkIngestEvents_Matching(b *testing.B) {
	db := testenv.NewDatabase(b)
	ctx := b.Context()
	ids := identity.NewStore(db.Pool)
	account := func(name string, jobWebhooks, allJobWebhooks int) int64 {
		a, err := ids.CreateAccount(ctx, name, webhooks.PlanTeam)
		if err != nil {
			b.Fatal(err)
		}
		loadWebhooks(b, db.Pool, a.ID, jobWebhooks, allJobWebhooks)
		return a.ID
	}
	one := account("one webhook", 1, 0)
	many := account("10,000 webhooks", 10_000, 0)
	oneFan := account("one webhook and ten for every job", 1, 10)
	manyFan := account("10,000 webhooks and ten for every job", 10_000, 10)
	// The steady state autovacuum keeps: statistics, and no index work
	// left over from the load.
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	concentrated := func(int) string { return "1" }
	spread := func(i int) string { return strconv.Itoa(i%10_000 + 1) }
	skewed := func(i int) string {
		if i%10 != 0 {
			return "1"
		}
		return spread(i / 10)
	}
	cases := []struct {
		name       string
		account    int64
		job        func(i int) string
		deliveries int // per event
	}{
		{"Webhooks=1/OneJob", one, concentrated, 1},
		{"Webhooks=10000/OneJob", many, concentrated, 1},
		{"Webhooks=10000/Spread", many, spread, 1},
		{"Webhooks=10000/Skewed", many, skewed, 1},
		{"Webhooks=1+10AllJobs/OneJob", oneFan, concentrated, 11},
		{"Webhooks=10000+10AllJobs/OneJob", manyFan, concentrated, 11},
	}
	pool := db.OneConnectionPool(b)
	store := deliveries.NewStore(pool)
	meter := testenv.NewCPUMeter(b, pool)
	var next atomic.Int64 // event ids stay new across every run of every case
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			group := make([]deliveries.NewEvent, benchGroup)
			n := 0
			ingest := func() {
				for j := range group {
					group[j] = deliveries.NewEvent{
						ID: fmt.Sprintf("wev_bench%d", next.Add(1)), AccountID: tc.account, Type: webhooks.EventRunCompleted,
						JobID: tc.job(n), RunID: "1", ToolName: "bench",
					}
					n++
				}
				res, lanes, err := store.IngestEvents(ctx, group)
				if err != nil {
					b.Fatal(err)
				}
				if !res[0].Stored || len(lanes) == 0 {
					b.Fatalf("results %+v, lanes %d: the events were not stored or matched nothing", res[0], len(lanes))
				}
			}
			ingest() // the connection's plan, made once, is not the steady state
			perEvent := meter.LoopPerEvent(b, &n, ingest)
			b.ReportMetric(perEvent/float64(tc.deliveries), "ns/delivery")
		})
	}
}

// BenchmarkIngestEvents_Routing compares the ingestion statement with
// routing's steps (filters and state change) and without them, for an
// account of one webhook that has neither, at the small groups a steady
// rate makes and at a burst's: the routing steps' fixed cost is paid by
// every group, whatever its size. Run (-count interleaves the two):
//
//	go test -run '^$' -bench IngestEvents_Routing -benchtime 2000x -count 3 ./deliveries/
func BenchmarkIngestEvents_Routing(b *testing.B) {
	db := testenv.NewDatabase(b)
	ctx := b.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "routing", webhooks.PlanTeam)
	if err != nil {
		b.Fatal(err)
	}
	loadWebhooks(b, db.Pool, a.ID, 1, 0)
	pool := db.OneConnectionPool(b)
	store := deliveries.NewStore(pool)
	meter := testenv.NewCPUMeter(b, pool)
	var next atomic.Int64
	for _, group := range []int{1, 2, 16} {
		for _, routed := range []bool{false, true} {
			name := fmt.Sprintf("Group=%d/Routing=without", group)
			if routed {
				name = fmt.Sprintf("Group=%d/Routing=with", group)
			}
			b.Run(name, func(b *testing.B) {
				events := make([]deliveries.NewEvent, group)
				n := 0
				ingest := func() {
					for j := range events {
						events[j] = deliveries.NewEvent{ID: fmt.Sprintf("wev_routing%d", next.Add(1)), AccountID: a.ID,
							Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1", ToolName: "bench", Routed: routed}
						n++
					}
					res, lanes, err := store.IngestEvents(ctx, events)
					if err != nil {
						b.Fatal(err)
					}
					if !res[0].Stored || len(lanes) != 1 {
						b.Fatalf("results %+v, lanes %d: the events were not stored or matched nothing", res[0], len(lanes))
					}
				}
				ingest() // the connection's plan, made once, is not the steady state
				meter.LoopPerEvent(b, &n, ingest)
			})
		}
	}
}
