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
	"github.com/jobhooks/jobhooks/workflows"
)

// EnsureSchedules creates the retention and sweeper Schedules, or brings
// their intervals and actions in line with the configuration.
func EnsureSchedules(ctx context.Context, tc client.Client, cfg config.Config) error {
	if err := EnsureRetentionSchedule(ctx, tc, cfg); err != nil {
		return err
	}
	return ensureSchedule(ctx, tc, workflows.SweepScheduleID, time.Minute, &client.ScheduleWorkflowAction{
		ID:                 workflows.SweepScheduleID,
		Workflow:           workflows.SweepWorkflowName,
		TaskQueue:          cfg.TemporalTaskQueue,
		WorkflowRunTimeout: 5 * time.Minute,
		RetryPolicy:        &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// EnsureRetentionSchedule creates, once, the Schedule that purges delivery
// records older than the retention period every RetentionInterval, and on
// later starts brings its interval and action in line with the
// configuration.
func EnsureRetentionSchedule(ctx context.Context, tc client.Client, cfg config.Config) error {
	return ensureSchedule(ctx, tc, workflows.RetentionScheduleID, RetentionInterval(cfg.DeliveryRetention), retentionAction(cfg))
}

// RetentionInterval is how often the purge runs for a retention period:
// a tenth of it, so a record outlives its retention by at most 10 %, but
// at least every hour (a long retention) and at most every minute (each
// run is a workflow in Temporal's history; the sweeper's pace).
func RetentionInterval(retention time.Duration) time.Duration {
	return min(max(retention/10, time.Minute), time.Hour)
}

// ensureSchedule creates a Schedule running action every interval; when it
// exists, it updates its interval and action and keeps its state, which
// operators may have changed (for example paused it).
func ensureSchedule(ctx context.Context, tc client.Client, id string, every time.Duration, action *client.ScheduleWorkflowAction) error {
	_, err := tc.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action:  action,
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	err = tc.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sched := in.Description.Schedule
			sched.Action = action
			sched.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
			return &client.ScheduleUpdate{Schedule: &sched}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, err)
	}
	return nil
}

// retentionAction purges delivery records older than the retention period.
func retentionAction(cfg config.Config) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                 workflows.RetentionScheduleID,
		Workflow:           workflows.RetentionWorkflowName,
		Args:               []any{cfg.DeliveryRetention},
		TaskQueue:          cfg.TemporalTaskQueue,
		WorkflowRunTimeout: 2 * time.Hour,
		RetryPolicy:        &temporal.RetryPolicy{MaximumAttempts: 1},
	}
}
