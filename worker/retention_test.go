package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/acme/webhooks"
	"github.com/acme/webhooks/activities"
	"github.com/acme/webhooks/deliveries"
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
		if _, err := e.store.BeginAttempt(ctx, in); err != nil {
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
			acts := activities.New(activities.Deps{Store: e.store, Logger: discardLogger(), Now: func() time.Time { return time.Now().Add(tt.age) }})
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
