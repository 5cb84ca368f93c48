// Package workflows is the durable orchestration of deliveries: one event
// workflow per ingested event, one delivery workflow per event x webhook.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/acme/webhooks"
	"github.com/acme/webhooks/deliveries"
)

// attemptSlack is what an attempt may take beyond the HTTP limit: the two
// database round trips around the POST.
const attemptSlack = 15 * time.Second

// Deliver delivers one event to one webhook. It builds the body once (so
// every attempt sends identical bytes) and runs the attempt as a local
// activity whose retry policy spaces the attempts: a delivery that succeeds
// first time costs one workflow task and six history events. Long backoffs
// become durable timers, so retries survive worker and server restarts.
func Deliver(ctx workflow.Context, in deliveries.DeliveryInput) (deliveries.DeliveryResult, error) {
	info := workflow.GetInfo(ctx)
	payload := in.Payload
	if len(payload) == 0 {
		var err error
		payload, err = webhooks.BuildPayload(webhooks.PayloadEnvelope{
			AccountID: in.Event.AccountID, SubscriptionID: in.SubscriptionID, EventID: in.Event.ID,
			Timestamp: workflow.Now(ctx), EventType: in.Event.Type, WebhookName: in.WebhookName,
			Data: in.Event.Data, ToolName: in.ToolName,
		})
		if err != nil {
			return deliveries.DeliveryResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("build payload: %v", err), "InvalidPayload", err)
		}
	}
	maxAttempts := in.Retry.MaximumAttempts
	if in.SingleAttempt || maxAttempts < 1 {
		maxAttempts = 1
	}
	attemptIn := deliveries.AttemptInput{
		DeliveryID: in.DeliveryID, WorkflowID: info.WorkflowExecution.ID, SubscriptionID: in.SubscriptionID,
		AccountID: in.Event.AccountID, EventID: in.Event.ID, EventType: in.Event.Type,
		JobID: in.Event.Data.JobID, RunID: in.Event.Data.RunID, IsTest: in.IsTest,
		RedeliveryOf: in.RedeliveryOf, Payload: payload, MaxAttempts: maxAttempts,
		AttemptTimeout: in.Retry.AttemptTimeout, RetryAfterMax: in.Retry.RetryAfterMax,
		EventAcceptedAt: in.EventAcceptedAt,
	}
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    in.Retry.AttemptTimeout + attemptSlack,
		ScheduleToCloseTimeout: 7 * 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    in.Retry.InitialInterval,
			BackoffCoefficient: in.Retry.BackoffCoefficient,
			MaximumInterval:    in.Retry.MaximumInterval,
			MaximumAttempts:    maxAttempts,
		},
	})
	var res deliveries.AttemptResult
	err := workflow.ExecuteLocalActivity(ctx, deliveries.AttemptDeliveryName, attemptIn).Get(ctx, &res)
	if err != nil {
		res = failedResult(err, maxAttempts)
		if !attemptRecorded(err) {
			recordCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
				StartToCloseTimeout:    attemptSlack,
				ScheduleToCloseTimeout: 7 * 24 * time.Hour,
				RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
			})
			if err := workflow.ExecuteLocalActivity(recordCtx, deliveries.RecordFailureName, in.DeliveryID, res.Error).Get(ctx, nil); err != nil {
				return res, fmt.Errorf("record delivery failure: %w", err)
			}
		}
	}
	// Only deliveries that did not succeed get a status search attribute: an
	// upsert costs the server a visibility write (about a quarter of its CPU
	// per delivery in the bench), and the fast path should not pay for it.
	// A completed delivery workflow without the attribute has succeeded.
	if res.Status != deliveries.StatusSucceeded {
		if err := workflow.UpsertTypedSearchAttributes(ctx, deliveries.SearchDeliveryStatus.ValueSet(res.Status)); err != nil {
			return res, fmt.Errorf("set delivery status search attribute: %w", err)
		}
	}
	return res, nil
}

// attemptRecorded reports whether the attempt activity's error is a failed
// attempt it recorded, rather than a failure to run or record the attempt.
func attemptRecorded(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == deliveries.ErrorTypeAttemptFailed
}

// failedResult turns the error of the last attempt into the delivery's
// result; the attempt carries its own outcome in the error details.
func failedResult(err error, maxAttempts int32) deliveries.AttemptResult {
	res := deliveries.AttemptResult{Status: deliveries.StatusFailed, Error: err.Error(), Attempts: maxAttempts}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.HasDetails() {
		var detail deliveries.AttemptResult
		if appErr.Details(&detail) == nil {
			res = detail
			res.Status = deliveries.StatusFailed
		}
	}
	return res
}
