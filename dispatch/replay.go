package dispatch

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/workflows"
)

// Replay sends a webhook's deliveries of [since, until) whose status is one
// of statuses again (failed and skipped ones: what the receiver missed),
// oldest first, at most ReplayRate a second, through the webhook's shard
// (or its own lane).
// It returns the replay's id and how many deliveries it will send; the
// replay runs in its own workflow (replay/{id}).
func (s *Service) Replay(ctx context.Context, accountID int64, subscriptionID string, since time.Time, until *time.Time, statuses []string) (string, int, error) {
	id, total, err := s.store.CreateReplay(ctx, accountID, subscriptionID, since, until, statuses)
	if err != nil {
		if webhooks.ErrorCode(err) == webhooks.ENOTFOUND {
			return "", 0, err
		}
		return "", 0, unavailable(err)
	}
	rate := max(s.opts.ReplayRate, 1)
	opts := client.StartWorkflowOptions{
		ID: workflows.ReplayWorkflowID(id), TaskQueue: s.opts.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAccountID.ValueSet(accountID), workflows.SearchWebhookID.ValueSet(subscriptionID)),
	}
	in := workflows.ReplayInput{ReplayID: id, BatchSize: rate, Interval: time.Second}
	err = withSearchAttributes(ctx, s.temporal, s.opts.Namespace, func() error {
		_, err := s.temporal.ExecuteWorkflow(ctx, opts, workflows.ReplayWorkflowName, in)
		return err
	})
	if err != nil {
		// Without its workflow the replay would never run: cancel it.
		_ = s.store.CancelReplay(context.WithoutCancel(ctx), accountID, subscriptionID, id)
		return "", 0, unavailable(fmt.Errorf("start replay %s: %w", id, err))
	}
	return id, total, nil
}

// CancelReplay stops a running replay of the account's webhook; what it
// sent stays sent. ENOTFOUND when there is no such running replay.
func (s *Service) CancelReplay(ctx context.Context, accountID int64, subscriptionID, replayID string) error {
	return s.store.CancelReplay(ctx, accountID, subscriptionID, replayID)
}
