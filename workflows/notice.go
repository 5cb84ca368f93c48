package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// NoticeWorkflowID is the id of the workflow that sends a notice: one per
// notice, so a notice is sent by one workflow at most.
func NoticeWorkflowID(noticeID string) string { return "notice/" + noticeID }

// noticeRetry sends a notice on the schedule of a delivery's first try
// and five retries, closer together: a notice is about now.
var noticeRetry = &temporal.RetryPolicy{
	InitialInterval:    10 * time.Second,
	BackoffCoefficient: 3,
	MaximumInterval:    30 * time.Minute,
	MaximumAttempts:    6,
}

// SendNotice sends one account notice (activities.SendNotice: an attempt
// per try, its outcome in this history) and records when every try failed.
func SendNotice(ctx workflow.Context, noticeID string) (activities.SendNoticeResult, error) {
	var a *activities.Notices
	sendCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         noticeRetry,
	})
	var res activities.SendNoticeResult
	err := workflow.ExecuteActivity(sendCtx, a.SendNotice, noticeID).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	recordCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 10},
	})
	if rerr := workflow.ExecuteActivity(recordCtx, a.NoticeGaveUp, noticeID).Get(ctx, nil); rerr != nil {
		workflow.GetLogger(ctx).Warn("cannot record a notice's failure", "error", rerr.Error())
	}
	return res, err
}
