package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks/workflows"
)

// Notices starts the workflow that sends each account notice
// (workflows.SendNotice, id notice/{id}): one per notice, ever.
type Notices struct {
	temporal  client.Client
	namespace string
	taskQueue string
}

// NewNotices returns a starter of notice workflows on taskQueue.
func NewNotices(tc client.Client, namespace, taskQueue string) *Notices {
	return &Notices{temporal: tc, namespace: namespace, taskQueue: taskQueue}
}

// StartNotice starts sending a notice of an account's; a notice whose
// workflow exists already is not sent again.
func (n *Notices) StartNotice(ctx context.Context, noticeID string, accountID int64) error {
	opts := client.StartWorkflowOptions{
		ID:                    workflows.NoticeWorkflowID(noticeID),
		TaskQueue:             n.taskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAccountID.ValueSet(accountID)),
		Priority:              temporal.Priority{FairnessKey: strconv.FormatInt(accountID, 10)},
	}
	err := withSearchAttributes(ctx, n.temporal, n.namespace, func() error {
		_, err := n.temporal.ExecuteWorkflow(ctx, opts, workflows.NoticeWorkflowName, noticeID)
		return err
	})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start sending notice %s: %w", noticeID, err)
	}
	return nil
}
