package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/acme/webhooks/config"
	"github.com/acme/webhooks/deliveries"
)

// EnsureRetentionSchedule creates, once, the Schedule that purges delivery
// records older than the retention period every hour.
func EnsureRetentionSchedule(ctx context.Context, tc client.Client, cfg config.Config) error {
	_, err := tc.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      deliveries.RetentionScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:                 deliveries.RetentionScheduleID,
			Workflow:           deliveries.RetentionWorkflowName,
			Args:               []any{cfg.DeliveryRetentionDays},
			TaskQueue:          cfg.TemporalTaskQueue,
			WorkflowRunTimeout: 2 * time.Hour,
			RetryPolicy:        &temporal.RetryPolicy{MaximumAttempts: 1},
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create retention schedule: %w", err)
	}
	return nil
}
