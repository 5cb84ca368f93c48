package deliveries_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/procstat"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// BenchmarkHotStatements_FixedCost measures what each statement of the
// delivery path costs the database when it carries nothing: an ingestion
// of no events, a claim of a lane key with nothing due, a record of no
// outcomes, each on its generic plan as the store runs them, with 2, 9 and
// 17 partitions of each partitioned table (the default retention keeps
// about 9). At a steady rate a call carries two to five rows, so this is
// most of what a delivery costs the database (docs/performance.md, "A
// statement's fixed cost"). It reports the backend's CPU a call
// (server-cpu-ms/op, from /proc: the server must run on this machine),
// which waits for a core do not inflate as they do ns/op.
// Run:
//
//	go test -run '^$' -bench HotStatements_FixedCost -benchtime 2000x ./deliveries/
func BenchmarkHotStatements_FixedCost(b *testing.B) {
	for _, partitions := range []int{2, 9, 17} {
		db := testenv.NewMigratedDatabase(b)
		ctx := b.Context()
		// The migration makes two; one-minute partitions up to the count
		// (their span does not matter to a plan, their number does).
		count := func() (n int) {
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
				WHERE i.inhparent = 'webhook_deliveries'::regclass`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		for ahead := 1; count() < partitions; ahead++ {
			if _, err := db.Pool.Exec(ctx, "SELECT webhook_delivery_partitions_ensure(interval '1 minute', now() + $1 * interval '1 minute')",
				ahead); err != nil {
				b.Fatal(err)
			}
		}
		if n := count(); n != partitions {
			b.Fatalf("%d partitions of webhook_deliveries, want %d", n, partitions)
		}
		a, err := identity.NewStore(db.Pool).CreateAccount(ctx, "fixed", webhooks.PlanTeam)
		if err != nil {
			b.Fatal(err)
		}
		// 100 webhooks for every job and 2,000 deliveries, so that the
		// plans are made on tables with statistics.
		loadWebhooks(b, db.Pool, a.ID, 0, 100)
		store := deliveries.NewStore(db.Pool)
		events := make([]deliveries.NewEvent, 20)
		for i := range events {
			events[i] = deliveries.NewEvent{ID: fmt.Sprintf("wev_fixed_%d", i), AccountID: a.ID, Type: webhooks.EventRunCompleted,
				JobID: "1", RunID: strconv.Itoa(i), Data: webhooks.RunData{JobID: "1"}, ToolName: "dbt"}
		}
		if _, _, err := store.IngestEvents(ctx, events); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		pool := db.OneConnectionPool(b)
		conn, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(conn.Release)
		// The store's plan settings (withGenericIndexPlans) for the session:
		// a plan made with sequential scans allowed has other nodes to start.
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan; SET jit = off; SET enable_seqscan = off"); err != nil {
			b.Fatal(err)
		}
		var pid int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			b.Fatal(err)
		}
		q := dbq.New(conn)
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"IngestEventsWithoutRouting", func() error {
				_, err := q.IngestEventsWithoutRouting(ctx, dbq.IngestEventsWithoutRoutingParams{Ids: []string{}, AccountIds: []int64{},
					EventTypes: []string{}, JobIds: []string{}, RunIds: []string{}, Datas: [][]byte{}, ToolNames: []string{},
					TraceParents: [][]byte{}, RoutingVersions: []int64{}})
				return err
			}},
			{"ClaimShared", func() error {
				_, err := q.ClaimShared(ctx, dbq.ClaimSharedParams{Lo: 0, Hi: 1, PerKey: 16, PageSize: 200, Rooms: []byte("{}"),
					PerWebhook: 16, DestRooms: []byte("{}"), PerDestination: 32, OrderMaxWaitMs: 1000, LeaseMs: 60000, WorkflowID: "fixed"})
				return err
			}},
			{"RecordAttempts", func() error {
				_, err := q.RecordAttempts(ctx, dbq.RecordAttemptsParams{ProbeFirstMs: 1000, ProbeMaxMs: 60000, DefaultOnOutage: "retry",
					DeliveryIds: []string{}, SubscriptionIds: []string{}, AttemptNumbers: []int32{}, StartedAts: []time.Time{},
					DurationsMs: []int32{}, StatusCodes: []int32{}, ErrorKinds: []string{}, ErrorMessages: []string{}, Snippets: []string{},
					Statuses: []string{}, RetryInsMs: []int64{}, Payloads: [][]byte{}, BodyNames: []string{}, Outages: []int32{},
					Probes: []bool{}, Leases: []time.Time{}})
				return err
			}},
		} {
			b.Run(fmt.Sprintf("partitions=%d/%s", partitions, tc.name), func(b *testing.B) {
				for range 50 { // the generic plan, made and cached
					if err := tc.call(); err != nil {
						b.Fatal(err)
					}
				}
				before, cpuKnown := backendCPU(pid)
				b.ResetTimer()
				for range b.N {
					if err := tc.call(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if after, ok := backendCPU(pid); ok && cpuKnown {
					b.ReportMetric(float64(after-before)/float64(time.Millisecond)/float64(b.N), "server-cpu-ms/op")
				}
			})
		}
	}
}

// backendCPU is the CPU a PostgreSQL backend of this machine has used
// (user and system); false when it cannot be read (a server elsewhere).
func backendCPU(pid int) (time.Duration, bool) {
	st, err := procstat.Read(pid)
	return st.Own, err == nil
}
