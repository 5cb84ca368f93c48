package deliveries_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

func TestPartitionWidth(t *testing.T) {
	tests := []struct {
		retention, want time.Duration
	}{
		{time.Minute, time.Minute}, // a quarter would be 15 s: at least a minute
		{10 * time.Minute, 150 * time.Second},
		{time.Hour, 15 * time.Minute},
		{720 * time.Hour, 7 * 24 * time.Hour}, // a quarter of 30 days is 7.5: at most a week
		{7*time.Minute + 3*time.Second, 105 * time.Second},
	}
	for _, tt := range tests {
		if got := deliveries.PartitionWidth(tt.retention); got != tt.want {
			t.Errorf("PartitionWidth(%v) = %v, want %v", tt.retention, got, tt.want)
		}
		if got := deliveries.PartitionsAhead(tt.retention); got != 2*tt.want {
			t.Errorf("PartitionsAhead(%v) = %v, want two widths", tt.retention, got)
		}
	}
}

// TestDeliveryIDs_CarryTheSecondTheyWereMade: an ingested delivery's id is
// the second it was made, then its event's and webhook's key, so its
// partition is its creation time's.
func TestDeliveryIDs_CarryTheSecondTheyWereMade(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	before := time.Now().Add(-time.Second)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_second", "1")}); err != nil {
		t.Fatal(err)
	}
	var id string
	var created time.Time
	if err := f.pool.QueryRow(t.Context(), `SELECT id, created_at FROM webhook_deliveries WHERE event_id = 'wev_second'`).Scan(&id, &created); err != nil {
		t.Fatal(err)
	}
	if !webhooks.IsDeliveryID(id) {
		t.Fatalf("delivery id %q is not a delivery id", id)
	}
	if want := webhooks.DeliveryIDSecond(created) + deliveries.DeliveryKey("wev_second", sub.ID); id != want {
		t.Errorf("delivery id %s, want %s: its creation's second, then its key", id, want)
	}
	if random := webhooks.NewDeliveryID(); !webhooks.IsDeliveryID(random) ||
		(!strings.HasPrefix(random, webhooks.DeliveryIDSecond(time.Now())) && !strings.HasPrefix(random, webhooks.DeliveryIDSecond(before.Add(time.Second)))) {
		t.Errorf("a new delivery id %s does not start with the second it was made", random)
	}
}

// partitionCount is how many partitions the registry lists, and how many
// partition tables of deliveries, of attempts and of events exist: always
// equal.
func (f *fixture) partitionCount(t *testing.T) (listed, deliveryTables, attemptTables, eventTables int) {
	t.Helper()
	err := f.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM webhook_delivery_partitions),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_deliveries'::regclass),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_delivery_attempts'::regclass),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_events'::regclass)`).Scan(&listed, &deliveryTables, &attemptTables, &eventTables)
	if err != nil {
		t.Fatal(err)
	}
	return listed, deliveryTables, attemptTables, eventTables
}

// TestPartitions_DropOnlyWhatHoldsNothingPending: retention drops a whole
// partition of delivery records, their attempts and their events once it
// ended before the cutoff and holds only final deliveries; a pending
// delivery (a paused webhook's) keeps its partition, and its event,
// whatever their age. Partitions are made again ahead, and ingestion goes
// on into them.
func TestPartitions_DropOnlyWhatHoldsNothingPending(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_done", "1"), f.event("wev_pending", "1")}); err != nil {
		t.Fatal(err)
	}
	done := testenv.DeliveryID(t, f.pool, "wev_done", sub.ID)
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: done, SubscriptionID: sub.ID,
		AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET route = 'paused' WHERE event_id = 'wev_pending'`); err != nil {
		t.Fatal(err)
	}
	listed, _, _, _ := f.partitionCount(t)
	// Far enough ahead that every partition has ended; the test database's
	// partitions reach two weeks ahead.
	cutoff := time.Now().Add(30 * 24 * time.Hour)

	dropped, err := f.store.DropPartitions(t.Context(), cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if dropped != listed-1 {
		t.Errorf("dropped %d of %d partitions, want all but the one holding the pending delivery", dropped, listed)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_deliveries`); got != 2 {
		t.Errorf("%d deliveries left, want both: their partition holds a pending one", got)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_events`); got != 2 {
		t.Errorf("%d events left, want both: they share their deliveries' partition", got)
	}

	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'skipped', next_attempt_at = NULL, completed_at = now()
		WHERE event_id = 'wev_pending'`); err != nil {
		t.Fatal(err)
	}
	if dropped, err := f.store.DropPartitions(t.Context(), cutoff); err != nil || dropped != 1 {
		t.Fatalf("dropped %d partitions (err %v), want the last one, now final", dropped, err)
	}
	if listed, deliveryTables, attemptTables, eventTables := f.partitionCount(t); listed != 0 || deliveryTables != 0 || attemptTables != 0 || eventTables != 0 {
		t.Errorf("%d partitions listed, %d tables of deliveries, %d of attempts and %d of events left, want none",
			listed, deliveryTables, attemptTables, eventTables)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_delivery_attempts`) + f.count(t, `SELECT count(*) FROM webhook_events`); got != 0 {
		t.Errorf("%d attempts and events left, want none: they go with their deliveries' partition", got)
	}

	made, err := f.store.EnsurePartitions(t.Context(), time.Now(), time.Hour)
	if err != nil || made != 3 {
		t.Fatalf("made %d partitions (err %v), want 3 of 15 minutes: the current one and two widths ahead", made, err)
	}
	if again, err := f.store.EnsurePartitions(t.Context(), time.Now(), time.Hour); err != nil || again != 0 {
		t.Errorf("made %d more partitions (err %v), want none: they are there", again, err)
	}
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_after", "1")}); err != nil {
		t.Fatalf("ingest into the new partitions: %v", err)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_deliveries WHERE event_id = 'wev_after'`); got != 1 {
		t.Errorf("%d deliveries of the event ingested after the drops, want 1", got)
	}
}

func (f *fixture) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDropPartitions_OneRunAtATime: a retention run that finds another
// dropping (its session lock taken) drops nothing, and the partitions go at
// the next run.
func TestDropPartitions_OneRunAtATime(t *testing.T) {
	f := newFixture(t)
	other, err := f.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(t.Context(), "SELECT pg_advisory_lock(hashtext('webhook_delivery_partitions_drop'))"); err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(30 * 24 * time.Hour)
	if dropped, err := f.store.DropPartitions(t.Context(), cutoff); err != nil || dropped != 0 {
		t.Fatalf("dropped %d partitions (err %v) while another run held the lock, want none", dropped, err)
	}
	if _, err := other.Exec(t.Context(), "SELECT pg_advisory_unlock(hashtext('webhook_delivery_partitions_drop'))"); err != nil {
		t.Fatal(err)
	}
	listed, _, _, _ := f.partitionCount(t)
	if dropped, err := f.store.DropPartitions(t.Context(), cutoff); err != nil || dropped != listed || listed == 0 {
		t.Errorf("dropped %d of %d partitions (err %v), want every one: all are empty and past the cutoff", dropped, listed, err)
	}
}

// TestPartitions_MadeAndDroppedBesideOpenStatements: making partitions and
// dropping them waits for no statement that ingests, claims or records, and
// takes no lock those would wait for. A transaction that holds the deliveries'
// table (as an ingestion or claim does) and a webhook's row (as a record
// does) stays open while partitions are made; one that holds a webhook's and
// an account's rows stays open while they are dropped. (Made by CREATE ...
// PARTITION OF, a partition needed the deliveries' table to itself; with
// foreign keys, making one needed the webhooks' table to itself against
// writers, and dropping one against every reader.)
func TestPartitions_MadeAndDroppedBesideOpenStatements(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	open := func(statements ...string) func() {
		t.Helper()
		tx, err := f.pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		end := func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }
		t.Cleanup(end) // before the database is dropped, whatever failed
		for _, s := range statements {
			if _, err := tx.Exec(t.Context(), s, sub.ID); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		return end
	}
	// Each step must end long before a blocked one would give up.
	within := func() (context.Context, context.CancelFunc) { return context.WithTimeout(t.Context(), 10*time.Second) }

	end := open(
		`UPDATE webhook_subscriptions SET updated_at = updated_at WHERE id = $1`,
		`UPDATE accounts SET name = name WHERE id = (SELECT account_id FROM webhook_subscriptions WHERE id = $1)`)
	listed, _, _, _ := f.partitionCount(t)
	ctx, cancel := within()
	dropped, err := f.store.DropPartitions(ctx, time.Now().Add(30*24*time.Hour))
	cancel()
	end()
	if err != nil || dropped != listed || listed == 0 {
		t.Fatalf("dropped %d of %d partitions beside an open record (err %v), want every one", dropped, listed, err)
	}

	end = open(
		`UPDATE webhook_deliveries SET updated_at = now() WHERE subscription_id = $1`,
		`UPDATE webhook_subscriptions SET updated_at = updated_at WHERE id = $1`)
	defer end()
	ctx, cancel = within()
	defer cancel()
	made, err := f.store.EnsurePartitions(ctx, time.Now(), time.Hour)
	if err != nil || made != 3 {
		t.Fatalf("made %d partitions beside an open ingestion and record (err %v), want 3 of 15 minutes", made, err)
	}
}

// intoOldestPartition moves an event and its deliveries into the oldest
// partition (the migration's "before"), as if they had been made an hour
// ago: row movement keeps each row whole.
func (f *fixture) intoOldestPartition(t *testing.T, eventID string) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_events SET accepted_at = now() - interval '1 hour' WHERE id = $1`, eventID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries
		SET id = webhook_delivery_id_floor(now() - interval '1 hour') || right(id, 18), created_at = now() - interval '1 hour'
		WHERE event_id = $1`, eventID); err != nil {
		t.Fatal(err)
	}
	var partition string
	if err := f.pool.QueryRow(t.Context(), `SELECT tableoid::regclass::text FROM webhook_events WHERE id = $1`, eventID).Scan(&partition); err != nil {
		t.Fatal(err)
	}
	if partition != "webhook_events_before" {
		t.Fatalf("event %s is in %s, want the oldest partition", eventID, partition)
	}
	f.pastOldestPartition(t)
}

// pastOldestPartition waits until the oldest partition (which ends a
// second after the migration) has ended, so what is stored next goes to a
// later one.
func (f *fixture) pastOldestPartition(t *testing.T) {
	t.Helper()
	var left time.Duration
	if err := f.pool.QueryRow(t.Context(), `SELECT greatest(ends_at - now(), interval '0')
		FROM webhook_delivery_partitions WHERE name = 'before'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	time.Sleep(left)
}

// TestIngestEvents_RepeatFoundInAnEarlierPartition: an event id is stored
// once across partitions: a repeat whose statement runs in a later
// partition than the first finds it there, stores nothing and makes no
// delivery.
func TestIngestEvents_RepeatFoundInAnEarlierPartition(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_once", "1")}); err != nil {
		t.Fatal(err)
	}
	f.intoOldestPartition(t, "wev_once")

	results, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_once", "1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || !results[0].AccountKnown || results[0].Stored {
		t.Errorf("repeat in a later partition: %+v, want a known account's duplicate", results)
	}
	if events, made := f.count(t, `SELECT count(*) FROM webhook_events WHERE id = 'wev_once'`),
		f.count(t, `SELECT count(*) FROM webhook_deliveries WHERE event_id = 'wev_once'`); events != 1 || made != 1 {
		t.Errorf("%d events and %d deliveries of it, want 1 and 1", events, made)
	}
}

// TestIngestEvents_RepeatAcrossAPartitionStartWaitsForTheFirst: near a
// partition's start, two statements storing the same id, the first still
// in the partition before, meet at the boundary's claim of the id: the
// second waits for the first's commit and stores nothing. (Without the
// claim, the second misses the first's uncommitted row in the other
// partition and stores the event again.)
func TestIngestEvents_RepeatAcrossAPartitionStartWaitsForTheFirst(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	// The first transaction, in the oldest partition (which ends a second
	// after the migration; the next starts then), as its ingestion stores
	// an event near a start: the id claimed, the event stored, not
	// committed yet.
	first, err := f.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(context.WithoutCancel(t.Context())) }()
	if _, err := first.Exec(t.Context(), `INSERT INTO webhook_event_boundary_ids (id) VALUES ('wev_turns')`); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(t.Context(), `INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, accepted_at)
		VALUES ('wev_turns', $1, $2, '1', '1', '\x01', 'dbt', now() - interval '1 hour')`, f.account.ID, webhooks.EventRunCompleted); err != nil {
		t.Fatal(err)
	}
	f.pastOldestPartition(t)
	var started bool
	if err := f.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM webhook_delivery_partitions
		WHERE starts_at BETWEEN now() - interval '25 seconds' AND now())`).Scan(&started); err != nil || !started {
		t.Fatalf("no partition started in the last 25 s (err %v): the second statement would not be near a start", err)
	}

	type outcome struct {
		results []deliveries.IngestResult
		err     error
	}
	second := make(chan outcome, 1)
	go func() {
		results, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_turns", "1")})
		second <- outcome{results, err}
	}()
	select {
	case o := <-second:
		t.Fatalf("the second statement ended (%+v, %v) while the first was open on the other side", o.results, o.err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := first.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	o := <-second
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(o.results) != 1 || o.results[0].Stored {
		t.Errorf("second statement: %+v, want a duplicate of the first's event", o.results)
	}
	if events := f.count(t, `SELECT count(*) FROM webhook_events WHERE id = 'wev_turns'`); events != 1 {
		t.Errorf("%d events with the id, want 1", events)
	}
}

// TestPartitions_RedeliveryKeepsItsEvent: a redelivery made in a later
// partition builds its body from its event, so the event's partition is
// kept until the redelivery's has gone.
func TestPartitions_RedeliveryKeepsItsEvent(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_again", "1")}); err != nil {
		t.Fatal(err)
	}
	original := testenv.DeliveryID(t, f.pool, "wev_again", sub.ID)
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: original, SubscriptionID: sub.ID,
		AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	f.intoOldestPartition(t, "wev_again")
	var moved string
	if err := f.pool.QueryRow(t.Context(), `SELECT id FROM webhook_deliveries WHERE event_id = 'wev_again'`).Scan(&moved); err != nil {
		t.Fatal(err)
	}
	redelivery, _, err := f.store.CreateRedelivery(t.Context(), f.account.ID, sub.ID, moved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL, completed_at = now()
		WHERE id = $1`, redelivery); err != nil {
		t.Fatal(err)
	}
	oldest := func() int {
		return f.count(t, `SELECT count(*) FROM webhook_delivery_partitions WHERE name = 'before'`)
	}

	// Past the oldest partition (and the migration's first minute, if it
	// has ended): the redelivery's partition is kept, and holds the
	// event's.
	// (The oldest ends a second after the migration's.)
	if _, err := f.store.DropPartitions(t.Context(), time.Now().Add(2*time.Second)); err != nil || oldest() != 1 {
		t.Fatalf("the oldest partition listed %d times after a drop (err %v), want kept: a later redelivery has its event", oldest(), err)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_events WHERE id = 'wev_again'`); got != 1 {
		t.Fatalf("%d events left, want the redelivered one", got)
	}
	// Past every partition: the redelivery's goes, then the event's.
	far := time.Now().Add(30 * 24 * time.Hour)
	listed, _, _, _ := f.partitionCount(t)
	total := 0
	for range 2 {
		dropped, err := f.store.DropPartitions(t.Context(), far)
		if err != nil {
			t.Fatal(err)
		}
		total += dropped
	}
	if total != listed || oldest() != 0 {
		t.Errorf("dropped %d of %d partitions in two runs, oldest listed %d times; want all: the redelivery's went first", total, listed, oldest())
	}
}

// TestIngestEvents_SameSideOfAStartNeverWait: near a partition's start,
// ingestion transactions storing different ids do not wait for each
// other: one open with its id claimed and its event stored leaves another
// free to store its own.
func TestIngestEvents_SameSideOfAStartNeverWait(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	f.pastOldestPartition(t)
	open, err := f.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Rollback(context.WithoutCancel(t.Context())) }()
	if _, err := open.Exec(t.Context(), `INSERT INTO webhook_event_boundary_ids (id) VALUES ('wev_open')`); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec(t.Context(), `INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name)
		VALUES ('wev_open', $1, $2, '1', '1', '\x01', 'dbt')`, f.account.ID, webhooks.EventRunCompleted); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	results, _, err := f.store.IngestEvents(ctx, []deliveries.NewEvent{f.event("wev_beside", "1")})
	if err != nil || len(results) != 1 || !results[0].Stored {
		t.Fatalf("ingestion beside an open one on the same side: %+v (err %v), want stored at once", results, err)
	}
}

// TestBoundaryClaims_NearAStartAndForgotten: ingestion claims an event's id
// only near a partition's start, and retention forgets claims older than a
// minute.
func TestBoundaryClaims_NearAStartAndForgotten(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	claimed := func(id string) int {
		return f.count(t, `SELECT count(*) FROM webhook_event_boundary_ids WHERE id = '`+id+`'`)
	}
	// A test database is always within 30 s of its first minute's start.
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_near", "1")}); err != nil {
		t.Fatal(err)
	}
	if claimed("wev_near") != 1 {
		t.Errorf("an event stored near a start has no claim of its id")
	}
	// The registry moved a day back: no partition starts near now.
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_delivery_partitions
		SET starts_at = starts_at - interval '1 day', ends_at = ends_at - interval '1 day'`); err != nil {
		t.Fatal(err)
	}
	results, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_far", "1")})
	if err != nil || len(results) != 1 || !results[0].Stored {
		t.Fatalf("ingest far from a start: %+v (err %v), want stored", results, err)
	}
	if claimed("wev_far") != 0 {
		t.Errorf("an event stored far from any start claimed its id")
	}

	if _, err := f.pool.Exec(t.Context(), `INSERT INTO webhook_event_boundary_ids (id, claimed_at)
		VALUES ('wev_old', now() - interval '61 seconds')`); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.ForgetBoundaryClaims(t.Context(), time.Now()); err != nil || n != 1 {
		t.Errorf("forgot %d claims (err %v), want the one older than a minute", n, err)
	}
	if claimed("wev_old") != 0 || claimed("wev_near") != 1 {
		t.Errorf("claims left: old %d, recent %d; want 0 and 1", claimed("wev_old"), claimed("wev_near"))
	}
}

// TestAnalyzeParent_JoinEstimates: a join of deliveries with their events
// over the partitioned parents is estimated from the parents' statistics.
// Never analyzed (autovacuum does not analyze a parent), it is taken to
// match 1/200 of all pairs, an estimate that grows with the tables; once
// AnalyzeParent ran on each, about one event a delivery. The partitions'
// statistics of other columns stay as autovacuum left them.
func TestAnalyzeParent_JoinEstimates(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	const events = 1000
	batch := make([]deliveries.NewEvent, events)
	for i := range batch {
		batch[i] = f.event(fmt.Sprintf("wev_join_%d", i), "1")
	}
	if _, _, err := f.store.IngestEvents(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	joined := func() float64 {
		t.Helper()
		var plan []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			}
		}
		var out []byte
		if err := f.pool.QueryRow(t.Context(), `EXPLAIN (FORMAT JSON) SELECT d.id FROM webhook_deliveries d
			JOIN webhook_events e ON e.id = d.event_id`).Scan(&out); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", out, err)
		}
		return plan[0].Plan.Rows
	}
	// The partitions analyzed as autovacuum would, the parents not.
	if _, err := f.pool.Exec(t.Context(), `DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT inhrelid::regclass AS p FROM pg_inherits
			WHERE inhparent IN ('webhook_deliveries'::regclass, 'webhook_events'::regclass) LOOP
			EXECUTE format('ANALYZE %s', r.p);
		END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	// The rows change after autovacuum's look: a partition's statistics of
	// status still say pending unless something analyzes whole rows again.
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'skipped'`); err != nil {
		t.Fatal(err)
	}
	if got := joined(); got < 2*events {
		t.Fatalf("join estimated at %v rows before the parents were analyzed, want the default's 1/200 of all pairs (%d)", got, events*events/200)
	}
	for _, table := range deliveries.PartitionedTables() {
		if err := f.store.AnalyzeParent(t.Context(), table); err != nil {
			t.Fatal(err)
		}
	}
	if got := joined(); got < events/2 || got > 2*events {
		t.Errorf("join estimated at %v rows once the parents were analyzed, want about %d", got, events)
	}
	var kept, stale int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE most_common_vals::text = '{pending}')
		FROM pg_stats WHERE tablename LIKE 'webhook_deliveries_%' AND attname = 'status' AND NOT inherited`).Scan(&kept, &stale); err != nil ||
		kept == 0 || stale != kept {
		t.Errorf("%d of %d partitions' statistics of status still autovacuum's (%v), want all: only the join columns are analyzed",
			stale, kept, err)
	}
	if err := f.store.AnalyzeParent(t.Context(), "webhook_subscriptions"); err == nil {
		t.Error("analyzed webhook_subscriptions as a partitioned table")
	}
}

// TestParentsToAnalyze: a parent is analyzed when it never was, when its
// partitions' rows (as autovacuum counts them) doubled or halved since its
// last ANALYZE, and, when a partition was made or dropped, when that
// ANALYZE is older than the bound; not at each change of partitions, which
// a retention of minutes makes every few minutes.
func TestParentsToAnalyze(t *testing.T) {
	f := newFixture(t)
	f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	next := 0
	ingest := func(t *testing.T, n int) {
		t.Helper()
		batch := make([]deliveries.NewEvent, n)
		for i := range batch {
			batch[i] = f.event(fmt.Sprintf("wev_analyze_%d", next), "1")
			next++
		}
		if _, _, err := f.store.IngestEvents(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	// partitionsAnalyzed counts each partition's rows as autovacuum would,
	// leaving the parents as they were.
	partitionsAnalyzed := func(t *testing.T) {
		t.Helper()
		if _, err := f.pool.Exec(t.Context(), `DO $$ DECLARE r record; BEGIN
			FOR r IN SELECT inhrelid::regclass AS p FROM pg_inherits WHERE inhparent IN
				('webhook_deliveries'::regclass, 'webhook_events'::regclass, 'webhook_delivery_attempts'::regclass) LOOP
				EXECUTE format('ANALYZE %s', r.p);
			END LOOP; END $$`); err != nil {
			t.Fatal(err)
		}
	}
	parentsAnalyzed := func(t *testing.T) {
		t.Helper()
		for _, table := range deliveries.PartitionedTables() {
			if err := f.store.AnalyzeParent(t.Context(), table); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := slices.Sorted(slices.Values(deliveries.PartitionedTables()))
	const day = 24 * time.Hour
	tests := []struct {
		name       string
		before     func(t *testing.T)
		changed    bool
		staleAfter time.Duration
		want       []string
	}{
		{"NeverAnalyzed", func(t *testing.T) { ingest(t, 100) }, false, day, all},
		{"JustAnalyzed", parentsAnalyzed, false, day, nil},
		{"PartitionsChangedSinceARecentAnalyze", nil, true, day, nil},
		{"PartitionsChangedSinceAStaleAnalyze", nil, true, 0, all},
		{"RowsBelowTheFloorDoubled", func(t *testing.T) { ingest(t, 300); partitionsAnalyzed(t) }, false, day, nil},
		{"RowsPastTwiceTheFloor", func(t *testing.T) { ingest(t, 700); partitionsAnalyzed(t) }, false, day,
			[]string{"webhook_deliveries", "webhook_events"}},
		{"RowsHalved", func(t *testing.T) {
			parentsAnalyzed(t)
			if _, err := f.pool.Exec(t.Context(), `DELETE FROM webhook_deliveries
				WHERE id IN (SELECT id FROM webhook_deliveries ORDER BY id LIMIT 700)`); err != nil {
				t.Fatal(err)
			}
			partitionsAnalyzed(t)
		}, false, day, []string{"webhook_deliveries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before(t)
			}
			got, err := f.store.ParentsToAnalyze(t.Context(), tt.changed, tt.staleAfter)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParentsToAnalyze(changed %v, stale after %v) = %v, want %v", tt.changed, tt.staleAfter, got, tt.want)
			}
		})
	}
}
