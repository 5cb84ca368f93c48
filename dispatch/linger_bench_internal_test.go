package dispatch

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// BenchmarkCommitter_Linger stores one event a call through an API
// process's two group commits into a real database (each event one
// delivery to its account's webhook), with the linger off, at its default
// and at 20 ms, from two kinds of producer: senders that each send their
// next event once the last is answered (a burst; the linger's risk: 32 of
// them fill a linger's 16 events, 8 do not), and an open stream at 300
// events/s (the linger's gain). It reports the
// events a statement, the answer's p50 and p99, and the database's and
// this process's CPU an event. b.N is the events sent; the stream takes
// b.N/300 seconds. Run:
//
//	go test -run '^$' -bench Committer_Linger -benchtime 3000x -count 3 ./dispatch/
func BenchmarkCommitter_Linger(b *testing.B) {
	db := testenv.NewDatabase(b)
	account := benchAccount(b, db, "linger", 0, 1, "") // one webhook for every job
	pool := db.PoolOf(b, 2)
	meter := testenv.NewCPUMeter(b, pool)
	var next atomic.Int64 // event ids stay new across every run
	event := func() ([]deliveries.NewEvent, []webhooks.Event) {
		id := next.Add(1)
		events := []webhooks.Event{{ID: fmt.Sprintf("wev_linger%d", id), AccountID: account, Type: webhooks.EventRunStarted,
			Data: webhooks.RunData{JobID: "1", RunID: strconv.FormatInt(id, 10)}}}
		return eventRows(events, "dbt", ""), events
	}
	producers := []struct {
		name string
		send func(b *testing.B, c *committer, answered []time.Duration)
	}{
		{"Senders=32", waitingSenders(32, event)},
		{"Senders=8", waitingSenders(8, event)},
		{"Stream=300/s", func(b *testing.B, c *committer, answered []time.Duration) {
			start := time.Now()
			var wg sync.WaitGroup
			for i := range answered {
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / 300)))
				wg.Go(func() { answered[i] = submitOne(b, c, event) })
			}
			wg.Wait()
		}},
	}
	for _, p := range producers {
		for _, linger := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("%s/Linger=%v", p.name, linger), func(b *testing.B) {
				c := newTestCommitter(deliveries.NewStore(pool))
				c.waker = NewWaker(nopTemporal{}, "default", "webhooks", 8, slog.New(slog.DiscardHandler))
				c.linger, c.streamGap = linger, defaultStreamGap
				var statements atomic.Int64
				c.observe = func(int, time.Duration) { statements.Add(1) }
				for range 2 {
					go c.flushLoop(b.Context())
				}
				answered := make([]time.Duration, b.N)
				db0, self0 := meter.Read(b)
				b.ResetTimer()
				p.send(b, c, answered)
				b.StopTimer()
				db1, self1 := meter.Read(b)
				n := float64(b.N)
				slices.Sort(answered)
				b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(n/float64(statements.Load()), "events/statement")
				b.ReportMetric(float64(answered[len(answered)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(answered[len(answered)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64((db1-db0).Nanoseconds())/n, "db-cpu-ns/event")
				b.ReportMetric(float64((self1-self0).Nanoseconds())/n, "go-cpu-ns/event")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// waitingSenders are n producers that each send their next event once the
// last is answered.
func waitingSenders(n int, event func() ([]deliveries.NewEvent, []webhooks.Event)) func(*testing.B, *committer, []time.Duration) {
	return func(b *testing.B, c *committer, answered []time.Duration) {
		var sent atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for i := sent.Add(1) - 1; i < int64(len(answered)); i = sent.Add(1) - 1 {
					answered[i] = submitOne(b, c, event)
				}
			})
		}
		wg.Wait()
	}
}

// submitOne stores one new event through c and returns how long its
// answer took.
func submitOne(b *testing.B, c *committer, event func() ([]deliveries.NewEvent, []webhooks.Event)) time.Duration {
	rows, sources := event()
	start := time.Now()
	results, refused, err := c.submit(b.Context(), rows, sources)
	took := time.Since(start)
	if err != nil || refused != nil || !results[0].Stored {
		b.Errorf("event %s: %v %v %+v", rows[0].ID, err, refused, results)
	}
	return took
}
