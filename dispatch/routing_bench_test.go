package dispatch

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// benchFilter is the example filter; every benchmark event passes
// it, so an account's deliveries are the same with and without filters.
const benchFilter = `data.environmentName == "Prod" && data.runReason != "Triggered via API"`

// BenchmarkIngest_Routing stores groups of events through the committer's
// path (judging by filters, then the statement) to accounts of 1,000
// webhooks: without routing, each with a filter, each following states;
// events spread over the webhooks' jobs, or concentrated on one, and
// fanned out to 1,000 webhooks for every job. Compare ns/event of each
// shape's plain and routed accounts, and the CPU time the database's
// process and this one spent per event (steadier on a busy machine). Run:
//
//	go test -run '^$' -bench Ingest_Routing -benchtime 40x -count 3 ./dispatch/
func BenchmarkIngest_Routing(b *testing.B) {
	db := testenv.NewDatabase(b)
	ctx := b.Context()
	spreadPlain := benchAccount(b, db, "1,000 webhooks", 1000, 0, "")
	spreadFiltered := benchAccount(b, db, "1,000 webhooks with filters", 1000, 0, "filter")
	spreadStates := benchAccount(b, db, "1,000 webhooks following states", 1000, 0, "state_change")
	fanPlain := benchAccount(b, db, "1,000 webhooks for every job", 0, 1000, "")
	fanFiltered := benchAccount(b, db, "1,000 webhooks for every job with filters", 0, 1000, "filter")
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	spread := func(i int) string { return strconv.Itoa(i%1000 + 1) }
	one := func(int) string { return "1" }
	cases := []struct {
		name    string
		account int64
		job     func(i int) string
		group   int
	}{
		{"Spread/Plain", spreadPlain, spread, 100},
		{"Spread/Filters", spreadFiltered, spread, 100},
		{"Spread/StateChange", spreadStates, spread, 100},
		{"OneJob/Plain", spreadPlain, one, 100},
		{"OneJob/Filters", spreadFiltered, one, 100},
		{"OneJob/StateChange", spreadStates, one, 100},
		{"FanOut1000/Plain", fanPlain, spread, 5},
		{"FanOut1000/Filters", fanFiltered, spread, 5},
	}
	pool := db.OneConnectionPool(b)
	meter := testenv.NewCPUMeter(b, pool)
	c := newTestCommitter(deliveries.NewStore(pool))
	c.waker = NewWaker(nopTemporal{}, "default", "webhooks", 8, slog.New(slog.DiscardHandler))
	var next atomic.Int64 // event ids stay new across every run of every case
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			ingest := func() {
				events := make([]webhooks.Event, tc.group)
				for j := range events {
					id := next.Add(1)
					typ := []string{webhooks.EventRunErrored, webhooks.EventRunCompleted}[(n/1000)%2]
					events[j] = webhooks.Event{ID: fmt.Sprintf("wev_bench%d", id), AccountID: tc.account, Type: typ,
						Data: webhooks.RunData{JobID: tc.job(n), RunID: strconv.FormatInt(id, 10), EnvironmentName: "Prod",
							RunReason: "scheduled", RunStartedAt: "2026-11-01T00:00:00Z"}}
					n++
				}
				rows := eventRows(events, "dbt", "")
				g := &ingestGroup{events: rows, sources: events, done: make(chan struct{})}
				c.flush([]*ingestGroup{g})
				if g.err != nil || g.refused != nil || !g.results[0].Stored {
					b.Fatalf("group: %v %v %+v", g.err, g.refused, g.results[0])
				}
			}
			// The first group reads and compiles the account's filters:
			// once per process and change, not part of the steady state.
			ingest()
			meter.LoopPerEvent(b, &n, ingest)
		})
	}
}

// benchAccount creates an account of jobWebhooks webhooks, each for its own
// job (1, 2, ...), and allJobWebhooks for every job, all for every event
// type; settings "filter" gives each benchFilter, "state_change" has each
// follow states, "" neither.
func benchAccount(b *testing.B, db *testenv.Database, name string, jobWebhooks, allJobWebhooks int, settings string) int64 {
	ctx := b.Context()
	a, err := identity.NewStore(db.Pool).CreateAccount(ctx, name, webhooks.PlanTeam)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO webhook_subscriptions (id, account_id, name, client_url, event_types, job_ids, secret_key_id,
		                                   secret_ciphertext, created_at, updated_at)
		SELECT 'wsu_bench' || $1::bigint || '_' || g, $1, 'hook', 'https://example.com/', $4::text[],
		       CASE WHEN g <= $2 THEN ARRAY[g::bigint] ELSE '{}' END, 'k1', '\x00', now(), now()
		FROM generate_series(1, $2::int + $3::int) g`, a.ID, jobWebhooks, allJobWebhooks, webhooks.EventTypes); err != nil {
		b.Fatal(err)
	}
	switch settings {
	case "filter":
		_, err = db.Pool.Exec(ctx, `
			INSERT INTO webhook_delivery_settings (subscription_id, account_id, filter, created_at, updated_at)
			SELECT id, account_id, $2, now(), now() FROM webhook_subscriptions WHERE account_id = $1`, a.ID, benchFilter)
	case "state_change":
		_, err = db.Pool.Exec(ctx, `
			INSERT INTO webhook_delivery_settings (subscription_id, account_id, notify_on, created_at, updated_at)
			SELECT id, account_id, 'state_change', now(), now() FROM webhook_subscriptions WHERE account_id = $1`, a.ID)
	}
	if err != nil {
		b.Fatal(err)
	}
	return a.ID
}

// BenchmarkJudge is the Go side of filters alone: judging groups of 100
// events against an account of 1,000 filtered webhooks, each for its own
// job (each event meets one filter) or all for every job (each event meets
// all 1,000). Run:
//
//	go test -run '^$' -bench Judge -count 3 ./dispatch/
func BenchmarkJudge(b *testing.B) {
	for _, tc := range []struct {
		name    string
		allJobs bool
		group   int
	}{{"Webhooks=1000/OwnJob", false, 100}, {"Webhooks=1000/AllJobs", true, 10}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newRoutingCache(slog.New(slog.DiscardHandler))
			acc := deliveries.AccountRouting{AccountID: 1, Version: 1}
			for i := 1; i <= 1000; i++ {
				w := deliveries.FilteredWebhook{ID: fmt.Sprintf("wsu_%d", i), Name: "hook", EventTypes: webhooks.EventTypes, Filter: benchFilter}
				if !tc.allJobs {
					w.JobIDs = []int64{int64(i)}
				}
				acc.Filters = append(acc.Filters, w)
			}
			c.accounts[1] = c.compile(acc)
			events := make([]webhooks.Event, tc.group)
			for i := range events {
				events[i] = webhooks.Event{ID: fmt.Sprintf("wev_%d", i), AccountID: 1, Type: webhooks.EventRunErrored,
					Data: webhooks.RunData{JobID: strconv.Itoa(i*7%1000 + 1), RunID: "1", EnvironmentName: "Prod", RunReason: "scheduled"}}
			}
			rows := eventRows(events, "dbt", "")
			for b.Loop() {
				c.judge(rows, events)
			}
			if rows[0].RoutingVersion != 1 || !rows[0].Routed || len(rows[0].Rejected) != 0 {
				b.Fatalf("judged %+v", rows[0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tc.group), "ns/event")
		})
	}
}
