package deliveries_test

import (
	"context"
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
// partition tables of deliveries and of attempts exist: always equal.
func (f *fixture) partitionCount(t *testing.T) (listed, deliveryTables, attemptTables int) {
	t.Helper()
	err := f.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM webhook_delivery_partitions),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_deliveries'::regclass),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_delivery_attempts'::regclass)`).Scan(&listed, &deliveryTables, &attemptTables)
	if err != nil {
		t.Fatal(err)
	}
	return listed, deliveryTables, attemptTables
}

// TestPartitions_DropOnlyWhatHoldsNothingPending: retention drops a whole
// partition of delivery records and their attempts once it ended before the
// cutoff and holds only final deliveries; a pending delivery (a paused
// webhook's) keeps its partition, and its event, whatever their age. Events
// go once no delivery has them. Partitions are made again ahead, and
// ingestion goes on into them.
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
	listed, _, _ := f.partitionCount(t)
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
	if n, err := f.store.PurgeEvents(t.Context(), cutoff, 100); err != nil || n != 0 {
		t.Errorf("purged %d events (err %v), want none: both still have their deliveries", n, err)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_deliveries`); got != 2 {
		t.Errorf("%d deliveries left, want both: their partition holds a pending one", got)
	}

	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'skipped', next_attempt_at = NULL, completed_at = now()
		WHERE event_id = 'wev_pending'`); err != nil {
		t.Fatal(err)
	}
	if dropped, err := f.store.DropPartitions(t.Context(), cutoff); err != nil || dropped != 1 {
		t.Fatalf("dropped %d partitions (err %v), want the last one, now final", dropped, err)
	}
	if n, err := f.store.PurgeEvents(t.Context(), cutoff, 100); err != nil || n != 2 {
		t.Errorf("purged %d events (err %v), want both, their deliveries gone", n, err)
	}
	if listed, deliveryTables, attemptTables := f.partitionCount(t); listed != 0 || deliveryTables != 0 || attemptTables != 0 {
		t.Errorf("%d partitions listed, %d tables of deliveries and %d of attempts left, want none", listed, deliveryTables, attemptTables)
	}
	if got := f.count(t, `SELECT count(*) FROM webhook_delivery_attempts`); got != 0 {
		t.Errorf("%d attempts left, want none: they go with their deliveries' partition", got)
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
	listed, _, _ := f.partitionCount(t)
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
	listed, _, _ := f.partitionCount(t)
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
