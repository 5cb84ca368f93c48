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
)

func TestRetention_ScheduleAndPurge(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	desc, err := e.temporal.ScheduleClient().GetHandle(ctx, deliveries.RetentionScheduleID).Describe(ctx)
	if err != nil {
		t.Fatalf("retention schedule: %v", err)
	}
	if desc.Schedule.Spec == nil || len(desc.Schedule.Spec.Intervals) != 1 || desc.Schedule.Spec.Intervals[0].Every != time.Hour {
		t.Errorf("schedule spec = %+v", desc.Schedule.Spec)
	}

	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	for i := range 3 {
		in := deliveries.AttemptInput{
			DeliveryID: webhooks.NewID(webhooks.DeliveryIDPrefix), WorkflowID: webhooks.NewID("wf"),
			SubscriptionID: sub.ID, AccountID: e.account.ID, EventID: webhooks.NewID(webhooks.EventIDPrefix),
			EventType: webhooks.EventRunStarted, JobID: "1", RunID: string(rune('1' + i)), Payload: []byte(`{}`),
		}
		if err := e.store.RecordAttempt(ctx, in, deliveries.AttemptRecord{
			AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 200, DeliveryStatus: deliveries.StatusSucceeded,
		}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		age         time.Duration // how far "now" is moved ahead
		wantDeleted int64
		wantLeft    int64
	}{
		{"YoungerThanRetentionKept", 29 * 24 * time.Hour, 0, 3},
		{"OlderThanRetentionPurged", 31 * 24 * time.Hour, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Batches of 2 over 3 records: the loop must go round to purge all.
			acts := activities.New(activities.Deps{Store: e.store, Logger: discardLogger(), PurgeBatchSize: 2, Now: func() time.Time { return time.Now().Add(tt.age) }})
			n, err := acts.PurgeDeliveryRecords(ctx, 30)
			if err != nil || n != tt.wantDeleted {
				t.Fatalf("purged %d (%v), want %d", n, err, tt.wantDeleted)
			}
			_, left, err := e.store.ListDeliveries(ctx, e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
			if err != nil || left != tt.wantLeft {
				t.Errorf("%d records left (%v), want %d", left, err, tt.wantLeft)
			}
		})
	}
}

func TestRetention_ScheduleFollowsConfiguration(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	describeAction := func() *client.ScheduleWorkflowAction {
		t.Helper()
		desc, err := e.temporal.ScheduleClient().GetHandle(ctx, deliveries.RetentionScheduleID).Describe(ctx)
		if err != nil {
			t.Fatalf("describe retention schedule: %v", err)
		}
		action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
		if !ok {
			t.Fatalf("action is %T", desc.Schedule.Action)
		}
		return action
	}
	retentionDays := func(a *client.ScheduleWorkflowAction) int {
		t.Helper()
		var days int
		p, ok := a.Args[0].(*commonpb.Payload)
		if !ok || converter.GetDefaultDataConverter().FromPayload(p, &days) != nil {
			t.Fatalf("action args = %v", a.Args)
		}
		return days
	}

	changed := e.cfg
	changed.DeliveryRetentionDays = 7
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
	if a.TaskQueue != changed.TemporalTaskQueue || retentionDays(a) != 7 {
		t.Fatalf("schedule action = queue %s, %d days; want %s, 7 days", a.TaskQueue, retentionDays(a), changed.TemporalTaskQueue)
	}
}

// Deliveries to one webhook run concurrently: an older attempt that is
// recorded late must not move the webhook's latest status back.
func TestRecordAttempt_LateOlderAttemptKeepsLatestStatus(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	sub, _ := e.subscribe("http://127.0.0.1:9/hook", allTypes, nil, true)
	newer := time.Now().UTC().Truncate(time.Microsecond)
	for i, rec := range []struct {
		started time.Time
		code    int
	}{{newer, 200}, {newer.Add(-time.Minute), 503}} {
		in := deliveries.AttemptInput{
			DeliveryID: webhooks.NewID(webhooks.DeliveryIDPrefix), WorkflowID: webhooks.NewID("wf"),
			SubscriptionID: sub.ID, AccountID: e.account.ID, EventID: webhooks.NewID(webhooks.EventIDPrefix),
			EventType: webhooks.EventRunStarted, JobID: "1", RunID: string(rune('1' + i)), Payload: []byte(`{}`),
		}
		if err := e.store.RecordAttempt(ctx, in, deliveries.AttemptRecord{
			AttemptNumber: 1, StartedAt: rec.started,
			StatusCode: rec.code, DeliveryStatus: deliveries.StatusSucceeded,
		}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.subs.Get(ctx, e.account.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.HTTPStatusCode != 200 || got.DispatchedAt == nil || !got.DispatchedAt.Equal(newer) {
		t.Fatalf("subscription status %d dispatched %v, want 200 at %v", got.HTTPStatusCode, got.DispatchedAt, newer)
	}
}
