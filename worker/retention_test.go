package worker_test

import (
	"context"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/worker"
	"github.com/jobhooks/jobhooks/workflows"
)

// describeSchedule returns the schedule id, failing the test if it does
// not exist.
func (e *env) describeSchedule(id string) *client.ScheduleDescription {
	e.t.Helper()
	ctx := context.Background()
	desc, err := e.temporal.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		e.t.Fatalf("describe schedule %s: %v", id, err)
	}
	return desc
}

func scheduleEvery(desc *client.ScheduleDescription) time.Duration {
	if desc.Schedule.Spec == nil || len(desc.Schedule.Spec.Intervals) != 1 {
		return 0
	}
	return desc.Schedule.Spec.Intervals[0].Every
}

func TestRetention_ScheduleAndPurge(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	if every := scheduleEvery(e.describeSchedule(workflows.RetentionScheduleID)); every != time.Hour {
		t.Errorf("retention schedule runs every %v, want 1h (the default retention's)", every)
	}

	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	for range 3 {
		e.ingest(webhooks.EventRunStarted, 1, "", sub.ID)
	}
	// The test database's partitions: the migration's "before" (empty) and
	// its first minute (holding the three records), then testenv's weeks
	// ahead.
	tests := []struct {
		name      string
		retention time.Duration
		age       time.Duration // how far "now" is moved ahead
		want      deliveries.PurgeResult
		wantLeft  int64 // records, and their events
	}{
		{"YoungerThanRetentionKept", 30 * 24 * time.Hour, 29 * 24 * time.Hour, deliveries.PurgeResult{}, 3},
		{"YoungerThanMinutesKept", 10 * time.Minute, 9 * time.Minute, deliveries.PurgeResult{}, 3},
		// A record goes with its partition: this one ends a minute after
		// the migration, so 11 minutes past it with 10 minutes' retention.
		{"OlderThanMinutesPurged", 10 * time.Minute, 30 * time.Minute, deliveries.PurgeResult{Partitions: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts := activities.New(activities.Deps{Store: e.store, Logger: discardLogger(),
				Now: func() time.Time { return time.Now().Add(tt.age) }})
			got, err := acts.Maintenance.PurgeDeliveryRecords(ctx, tt.retention)
			if err != nil || got != tt.want {
				t.Fatalf("purged %+v (%v), want %+v", got, err, tt.want)
			}
			_, left, err := e.store.ListDeliveries(ctx, e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
			if err != nil || left != tt.wantLeft {
				t.Errorf("%d records left (%v), want %d", left, err, tt.wantLeft)
			}
			var events int64
			if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM webhook_events WHERE account_id = $1", e.account.ID).Scan(&events); err != nil || events != tt.wantLeft {
				t.Errorf("%d events left (%v), want %d: they go with their deliveries' partition", events, err, tt.wantLeft)
			}
		})
	}
}

// The sweeper wakes lanes whose wake-up was lost: it must exist once a
// worker has started, run every minute on the worker's task queue.
func TestSweeper_ScheduleExistsAfterWorkerStarts(t *testing.T) {
	e := newEnv(t, true, nil)
	desc := e.describeSchedule(workflows.SweepScheduleID)
	if every := scheduleEvery(desc); every != time.Minute {
		t.Errorf("sweeper schedule runs every %v, want 1m", every)
	}
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok {
		t.Fatalf("sweeper action is %T", desc.Schedule.Action)
	}
	if name, _ := action.Workflow.(string); name != workflows.SweepWorkflowName || action.TaskQueue != e.cfg.TemporalTaskQueue {
		t.Errorf("sweeper action = workflow %v on %s, want %s on %s", action.Workflow, action.TaskQueue,
			workflows.SweepWorkflowName, e.cfg.TemporalTaskQueue)
	}
}

func TestRetention_ScheduleFollowsConfiguration(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	describeAction := func() *client.ScheduleWorkflowAction {
		t.Helper()
		action, ok := e.describeSchedule(workflows.RetentionScheduleID).Schedule.Action.(*client.ScheduleWorkflowAction)
		if !ok {
			t.Fatal("retention schedule action is not a workflow action")
		}
		return action
	}
	retention := func(a *client.ScheduleWorkflowAction) time.Duration {
		t.Helper()
		var d time.Duration
		p, ok := a.Args[0].(*commonpb.Payload)
		if !ok || converter.GetDefaultDataConverter().FromPayload(p, &d) != nil {
			t.Fatalf("action args = %v", a.Args)
		}
		return d
	}

	changed := e.cfg
	changed.DeliveryRetention = 10 * time.Minute
	changed.TemporalTaskQueue = e.cfg.TemporalTaskQueue + "-changed"
	t.Cleanup(func() { _ = worker.EnsureRetentionSchedule(ctx, e.temporal, e.cfg) })
	if err := worker.EnsureRetentionSchedule(ctx, e.temporal, e.cfg); err != nil { // exists from here on
		t.Fatal(err)
	}
	for range 2 { // a changed configuration updates it, idempotently
		if err := worker.EnsureRetentionSchedule(ctx, e.temporal, changed); err != nil {
			t.Fatal(err)
		}
	}
	a := describeAction()
	if a.TaskQueue != changed.TemporalTaskQueue || retention(a) != 10*time.Minute {
		t.Fatalf("schedule action = queue %s, retention %s; want %s, 10m", a.TaskQueue, retention(a), changed.TemporalTaskQueue)
	}
	if every := scheduleEvery(e.describeSchedule(workflows.RetentionScheduleID)); every != time.Minute {
		t.Errorf("retention schedule runs every %v after retention became 10m, want 1m", every)
	}
}

func TestRetentionInterval_TenthOfRetentionBetweenMinuteAndHour(t *testing.T) {
	tests := []struct {
		retention, want time.Duration
	}{
		{time.Minute, time.Minute},
		{5 * time.Minute, time.Minute},
		{10 * time.Minute, time.Minute},
		{30 * time.Minute, 3 * time.Minute},
		{6 * time.Hour, 36 * time.Minute},
		{10 * time.Hour, time.Hour},
		{720 * time.Hour, time.Hour},
	}
	for _, tt := range tests {
		if got := worker.RetentionInterval(tt.retention); got != tt.want {
			t.Errorf("RetentionInterval(%s) = %s, want %s", tt.retention, got, tt.want)
		}
	}
}

// An older attempt recorded late (after a newer one of the same webhook)
// must not move the webhook's latest status back.
func TestRecordAttempts_LateOlderAttemptKeepsLatestStatus(t *testing.T) {
	e := newEnv(t, false, nil) // no worker: the test makes the rounds
	ctx := context.Background()
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	// A real round delivers the first event.
	first := e.post(webhooks.EventRunStarted, 1, "")
	if _, err := e.runActivity(func(a *activities.Set) any { return a.Rounds.DeliverDue }, activities.RoundInput{
		SubscriptionID: sub.ID, AccountID: e.account.ID,
		WorkflowID: "test-round", WorkflowRunID: "test-run",
	}); err != nil {
		t.Fatalf("round: %v", err)
	}
	delivered := e.record(first, sub.ID)
	if delivered.Status != deliveries.StatusSucceeded || len(delivered.Attempts) != 1 {
		t.Fatalf("first delivery = %s with %d attempts, want succeeded with 1", delivered.Status, len(delivered.Attempts))
	}
	newer := delivered.Attempts[0].StartedAt

	// The second event's attempt started a minute before, and is recorded now.
	second := e.post(webhooks.EventRunStarted, 1, "")
	late := e.deliveryID(second, sub.ID)
	if _, err := e.store.RecordAttempts(ctx, []deliveries.AttemptRecord{{
		SubscriptionID: sub.ID, DeliveryID: late, AttemptNumber: 1, StartedAt: newer.Add(-time.Minute), Duration: 5 * time.Millisecond,
		StatusCode: 503, ErrorKind: deliveries.KindHTTPStatus, Status: deliveries.StatusRetrying, RetryIn: time.Hour,
	}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	if rec := e.record(second, sub.ID); rec.Status != deliveries.StatusRetrying || len(rec.Attempts) != 1 || rec.LastStatusCode != 503 {
		t.Errorf("late attempt's delivery = %s, %d attempt rows, last code %d; want retrying, 1, 503", rec.Status, len(rec.Attempts), rec.LastStatusCode)
	}
	got, err := e.subs.Get(ctx, e.account.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.HTTPStatusCode != 200 || got.DispatchedAt == nil || !got.DispatchedAt.Equal(newer) {
		t.Fatalf("subscription status %d dispatched %v, want 200 at %v", got.HTTPStatusCode, got.DispatchedAt, newer)
	}
}

// TestRetention_AnalyzesThePartitionedParents: autovacuum never analyzes
// a partitioned table's parent, so a retention run does: the first run
// (the parents never analyzed), then a run after which the partitions'
// rows halved or doubled (deliveries.Store.ParentsToAnalyze); a run that
// changed nothing, or made partitions ahead of rows much as they were at
// the last ANALYZE, leaves the statistics as they were. Each parent's row
// estimate (pg_class.reltuples, exact on tables this small) tells whether
// it was analyzed.
func TestRetention_AnalyzesThePartitionedParents(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	sub, _ := e.subscribe("http://127.0.0.1:1/hook", allTypes, nil, true)
	estimates := func() (map[string]float64, map[string]float64) {
		t.Helper()
		est, rows := map[string]float64{}, map[string]float64{}
		for _, table := range deliveries.PartitionedTables() {
			var r, n float64
			if err := e.db.Pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", table).Scan(&r); err != nil {
				t.Fatal(err)
			}
			if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			est[table], rows[table] = r, n
		}
		return est, rows
	}
	partitions := func() int {
		t.Helper()
		var n int
		if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'webhook_deliveries'::regclass").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if est, _ := estimates(); est["webhook_deliveries"] >= 0 || est["webhook_events"] >= 0 {
		t.Fatalf("parents analyzed before any retention run: %v", est)
	}
	now := time.Now()
	if _, err := e.store.EnsurePartitions(ctx, now, 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		events    int  // posted before the run
		final     bool // every delivery made final before the run
		retention time.Duration
		age       time.Duration
		made      bool // the run makes partitions ahead
		analyzed  bool
	}{
		{"NeverAnalyzed", 3, false, 30 * 24 * time.Hour, 0, false, true},
		{"NothingChanged", 2, false, 30 * 24 * time.Hour, 0, false, false},
		// Ten days on, partitions are made ahead and none dropped: the
		// parents, analyzed moments ago at about the rows they hold,
		// are left as they were.
		{"PartitionsMadeSinceARecentAnalyze", 0, false, 30 * 24 * time.Hour, 10 * 24 * time.Hour, true, false},
		// Every partition that ended 20 minutes from now goes: the
		// migration's and the one the deliveries are in.
		{"PartitionsDropped", 0, true, 10 * time.Minute, 30 * time.Minute, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range tt.events {
				e.post(webhooks.EventRunStarted, 1, "")
			}
			if tt.final {
				if _, err := e.db.Pool.Exec(ctx, `UPDATE webhook_deliveries
					SET status = 'skipped', next_attempt_at = NULL, completed_at = now()`); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := estimates()
			partitionsBefore := partitions()
			acts := activities.New(activities.Deps{Store: e.store, Logger: discardLogger(),
				Now: func() time.Time { return now.Add(tt.age) }})
			purged, err := acts.Maintenance.PurgeDeliveryRecords(ctx, tt.retention)
			if err != nil {
				t.Fatal(err)
			}
			est, rows := estimates()
			if made := partitions() > partitionsBefore; made != tt.made {
				t.Fatalf("the run made partitions: %v, want %v: the test needs them made only where it says", made, tt.made)
			}
			if tt.final != (purged.Partitions > 0) || (rows["webhook_deliveries"] == 0) != tt.final {
				t.Fatalf("dropped %d partitions, %v deliveries of %s left: the test needs partitions dropped only when final",
					purged.Partitions, rows["webhook_deliveries"], sub.ID)
			}
			for _, table := range deliveries.PartitionedTables() {
				want := before[table]
				if tt.analyzed {
					want = rows[table]
				}
				if est[table] != want {
					t.Errorf("%s estimated at %v rows after the run (dropped %d partitions), want %v (%d rows; analyzed: %v)",
						table, est[table], purged.Partitions, want, int(rows[table]), tt.analyzed)
				}
			}
		})
	}
}
