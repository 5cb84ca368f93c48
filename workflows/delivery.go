// Package workflows is the durable orchestration of deliveries: one event
// workflow per ingested event, which makes every delivery's first attempt,
// and a delivery workflow per event x webhook that needs retries (and per
// test delivery or redelivery).
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/deliveries"
)

// attemptSlack is what an attempt may take beyond the HTTP limit: the two
// database round trips around the POST.
const attemptSlack = 15 * time.Second

// Deliver delivers one event to one webhook: the retries of a delivery
// whose first attempt the event workflow made (AttemptsMade > 0, after
// FirstRetryDelay), a test delivery, or a redelivery. It builds the body once
// unless given (so every attempt sends identical bytes) and runs the attempt
// as a local activity whose retry policy spaces the attempts. Long backoffs
// become durable timers, so retries survive worker and server restarts.
func Deliver(ctx workflow.Context, in deliveries.DeliveryInput) (deliveries.DeliveryResult, error) {
	info := workflow.GetInfo(ctx)
	payload, err := buildPayload(in, workflow.Now(ctx))
	if err != nil {
		return deliveries.DeliveryResult{}, err
	}
	in.Payload = payload
	maxAttempts := in.Retry.MaximumAttempts
	if in.SingleAttempt || maxAttempts < 1 {
		maxAttempts = 1
	}
	remaining := maxAttempts - in.AttemptsMade
	if remaining < 1 {
		remaining = 1
	}
	if in.FirstRetryDelay > 0 {
		if err := workflow.Sleep(ctx, in.FirstRetryDelay); err != nil {
			return deliveries.DeliveryResult{}, err
		}
	}
	attemptIn := in.AttemptInput(info.WorkflowExecution.ID, maxAttempts)
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    in.Retry.AttemptTimeout + attemptSlack,
		ScheduleToCloseTimeout: 7 * 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    continuedBackoff(in.Retry, in.AttemptsMade),
			BackoffCoefficient: in.Retry.BackoffCoefficient,
			MaximumInterval:    in.Retry.MaximumInterval,
			MaximumAttempts:    remaining,
		},
	})
	var res deliveries.AttemptResult
	err = workflow.ExecuteLocalActivity(ctx, deliveries.AttemptDeliveryName, attemptIn).Get(ctx, &res)
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
	// A completed delivery workflow without the attribute has succeeded;
	// one handed over for retries started "retrying", so it always ends set.
	if res.Status != deliveries.StatusSucceeded || in.AttemptsMade > 0 {
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

// continuedBackoff is the first LA retry interval of a delivery that has
// already made `made` attempts: the schedule carries on where the event
// workflow's first attempt left it (30s, 2m, 8m, ... with the defaults)
// instead of starting over.
func continuedBackoff(p deliveries.RetryPolicy, made int32) time.Duration {
	d := p.InitialInterval
	for i := int32(0); i < made && (p.MaximumInterval <= 0 || d < p.MaximumInterval); i++ {
		d = time.Duration(float64(d) * p.BackoffCoefficient)
	}
	if p.MaximumInterval > 0 && d > p.MaximumInterval {
		d = p.MaximumInterval
	}
	return d
}
