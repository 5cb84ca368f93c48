package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
)

// EnsureRetentionSchedule creates, once, the Schedule that purges delivery
// records older than the retention period every hour, and on later starts
// brings its action in line with the configuration.
func EnsureRetentionSchedule(ctx context.Context, tc client.Client, cfg config.Config) error {
	_, err := tc.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      deliveries.RetentionScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action:  retentionAction(cfg),
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create retention schedule: %w", err)
	}
	// The schedule exists: make its action follow the current configuration
	// (DELIVERY_RETENTION_DAYS, TEMPORAL_TASK_QUEUE), keeping its spec and
	// state, which operators may have changed (for example paused it).
	err = tc.ScheduleClient().GetHandle(ctx, deliveries.RetentionScheduleID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sched := in.Description.Schedule
			sched.Action = retentionAction(cfg)
			return &client.ScheduleUpdate{Schedule: &sched}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update retention schedule: %w", err)
	}
	return nil
}

// retentionAction purges delivery records older than the retention period.
func retentionAction(cfg config.Config) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                 deliveries.RetentionScheduleID,
		Workflow:           deliveries.RetentionWorkflowName,
		Args:               []any{cfg.DeliveryRetentionDays},
		TaskQueue:          cfg.TemporalTaskQueue,
		WorkflowRunTimeout: 2 * time.Hour,
		RetryPolicy:        &temporal.RetryPolicy{MaximumAttempts: 1},
	}
}
