package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// stepOptions are those of the event workflow's bookkeeping steps (matching,
// starting retries): retried until they succeed, since the event is accepted.
var stepOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    5 * time.Minute,
	ScheduleToCloseTimeout: 7 * 24 * time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    5 * time.Minute,
	},
}

// Event delivers an ingested event. In one workflow task it matches a page
// of subscriptions, makes the first attempt of every delivery at once in one
// local activity, and hands each delivery that needs retries to its own
// delivery workflow (delivery/{event}/{webhook}), which makes the rest. Most
// deliveries succeed first time, so most cost a share of one workflow rather
// than a workflow each: the Temporal server's cost is per workflow. A
// fan-out beyond one page continues as new with the next page.
func Event(ctx workflow.Context, in deliveries.EventInput) (deliveries.EventResult, error) {
	done := in.Done
	var page deliveries.MatchPage
	match := deliveries.MatchInput{
		AccountID: in.Event.AccountID, EventType: in.Event.Type, JobID: in.Event.Data.JobID,
		After: in.After, Limit: deliveries.EventPageSize,
	}
	stepCtx := workflow.WithLocalActivityOptions(ctx, stepOptions)
	matchedAtIngestion := in.FirstPage != nil && in.After == ""
	if matchedAtIngestion {
		page = *in.FirstPage
	} else if err := workflow.ExecuteLocalActivity(stepCtx, deliveries.MatchSubscriptionsName, match).Get(ctx, &page); err != nil {
		return done, fmt.Errorf("match subscriptions: %w", err)
	}

	firstCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    in.Retry.AttemptTimeout + attemptSlack,
		ScheduleToCloseTimeout: in.Retry.AttemptTimeout + attemptSlack,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	now := eventTime(ctx, in)
	eventWorkflowID := workflow.GetInfo(ctx).WorkflowExecution.ID
	inputs := make([]deliveries.DeliveryInput, len(page.Subscriptions))
	ids := make([]string, len(page.Subscriptions))
	for i, sub := range page.Subscriptions {
		din := deliveries.NewDeliveryInput(in, sub)
		payload, err := buildPayload(din, now)
		if err != nil {
			return done, err
		}
		din.Payload = payload
		inputs[i], ids[i] = din, sub.ID
	}
	outcome := firstAttempts(ctx, firstCtx, in, inputs, eventWorkflowID)

	var retries []deliveries.DeliveryInput
	for i := range inputs {
		res, err := outcome(i)
		done.Matched++
		retry, handedOver := deliveries.DeliveryInput{}, false
		switch {
		case err != nil:
			retry, handedOver = handOff(inputs[i], err)
		case res.Status == deliveries.StatusSucceeded:
			done.Succeeded++
			continue
		case res.Status == deliveries.StatusCancelled:
			done.Cancelled++
			continue
		case res.Status == deliveries.StatusFailed:
			done.Failed++
			continue
		case res.Status == deliveries.StatusRetrying:
			retry, handedOver = retryAfter(inputs[i], max(res.Attempts, 1), res.RetryDelay)
		}
		if !handedOver {
			done.Failed++
			continue
		}
		done.Retrying++
		retries = append(retries, retry)
	}
	if len(retries) > 0 {
		if err := workflow.ExecuteLocalActivity(stepCtx, deliveries.StartRetriesName, retries).Get(ctx, nil); err != nil {
			return done, fmt.Errorf("start delivery retries: %w", err)
		}
	}
	// WebhookIds of a page matched at ingestion were set at the start.
	if attrs := eventSearchAttributes(ids, !matchedAtIngestion, done); len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			return done, fmt.Errorf("set event search attributes: %w", err)
		}
	}
	if page.More && len(page.Subscriptions) > 0 {
		next := in
		next.After, next.Done, next.FirstPage = ids[len(ids)-1], done, nil
		return done, workflow.NewContinueAsNewError(ctx, deliveries.EventWorkflowName, next)
	}
	return done, nil
}

// firstAttempts makes the first attempt of every delivery of the page at
// once and returns each one's outcome by index: one local activity for the
// page (AttemptDeliveries), or, for event workflows started before that
// release, one AttemptDelivery each, as their histories recorded.
func firstAttempts(ctx, firstCtx workflow.Context, in deliveries.EventInput, inputs []deliveries.DeliveryInput, workflowID string) func(int) (deliveries.AttemptResult, error) {
	if !in.BatchedFirstAttempts {
		futures := make([]workflow.Future, len(inputs))
		for i, din := range inputs {
			futures[i] = workflow.ExecuteLocalActivity(firstCtx, deliveries.AttemptDeliveryName,
				din.AttemptInput(workflowID, in.Retry.MaximumAttempts))
		}
		return func(i int) (deliveries.AttemptResult, error) {
			var res deliveries.AttemptResult
			err := futures[i].Get(ctx, &res)
			return res, err
		}
	}
	var results []deliveries.AttemptResult
	if len(inputs) > 0 {
		attempts := make([]deliveries.AttemptInput, len(inputs))
		for i, din := range inputs {
			attempts[i] = din.AttemptInput(workflowID, in.Retry.MaximumAttempts)
		}
		err := workflow.ExecuteLocalActivity(firstCtx, deliveries.AttemptDeliveriesName, attempts).Get(ctx, &results)
		if err == nil && len(results) != len(inputs) {
			err = fmt.Errorf("first attempts: %d outcomes for %d deliveries", len(results), len(inputs))
		}
		if err != nil {
			// The page's activity failed as a whole (timed out, or the
			// worker failed it): every delivery counts one attempt made and
			// is handed over; recorded outcomes are never sent again.
			return func(int) (deliveries.AttemptResult, error) { return deliveries.AttemptResult{}, err }
		}
	}
	return func(i int) (deliveries.AttemptResult, error) { return results[i], nil }
}

// handOff decides what follows a first attempt that ended in err: a
// delivery workflow for the remaining attempts, unless the attempt failed
// for good (a 4xx such as 410 Gone, a refused destination). An attempt that
// could not run or be recorded (database down) counts as made, as it would
// within a delivery workflow.
func handOff(in deliveries.DeliveryInput, err error) (deliveries.DeliveryInput, bool) {
	made, delay := int32(1), time.Duration(0)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == deliveries.ErrorTypeAttemptFailed {
		if appErr.NonRetryable() {
			return in, false
		}
		var res deliveries.AttemptResult
		if appErr.HasDetails() && appErr.Details(&res) == nil {
			made, delay = max(res.Attempts, 1), res.RetryDelay
		}
	}
	return retryAfter(in, made, delay)
}

// retryAfter hands a delivery that made `made` attempts to its delivery
// workflow, which waits delay (the Retry-After; zero: the initial backoff)
// before the next; false when no attempt is left.
func retryAfter(in deliveries.DeliveryInput, made int32, delay time.Duration) (deliveries.DeliveryInput, bool) {
	if made >= in.Retry.MaximumAttempts {
		return in, false
	}
	if delay <= 0 {
		delay = in.Retry.InitialInterval
	}
	in.AttemptsMade, in.FirstRetryDelay = made, delay
	return in, true
}

// eventSearchAttributes lists the webhooks the event went to (withIDs) and,
// when any first attempt did not succeed, the worst outcome.
func eventSearchAttributes(ids []string, withIDs bool, done deliveries.EventResult) []temporal.SearchAttributeUpdate {
	var attrs []temporal.SearchAttributeUpdate
	if withIDs {
		attrs = append(attrs, deliveries.SearchWebhookIDs.ValueSet(ids))
	}
	switch {
	case done.Failed > 0:
		attrs = append(attrs, deliveries.SearchDeliveryStatus.ValueSet(deliveries.StatusFailed))
	case done.Retrying > 0:
		attrs = append(attrs, deliveries.SearchDeliveryStatus.ValueSet(deliveries.StatusRetrying))
	case done.Cancelled > 0:
		attrs = append(attrs, deliveries.SearchDeliveryStatus.ValueSet(deliveries.StatusCancelled))
	}
	return attrs
}

// eventTime is the payload timestamp of an event's deliveries: when the API
// accepted the event, so a run repeated after a worker crash (or a reset)
// rebuilds byte-identical bodies. Input without an acceptance time (from
// before it was recorded) uses the workflow task's time.
func eventTime(ctx workflow.Context, in deliveries.EventInput) time.Time {
	if !in.AcceptedAt.IsZero() {
		return in.AcceptedAt.UTC()
	}
	return workflow.Now(ctx)
}

// buildPayload is the body every attempt of a delivery sends.
func buildPayload(in deliveries.DeliveryInput, now time.Time) ([]byte, error) {
	if len(in.Payload) > 0 {
		return in.Payload, nil
	}
	payload, err := webhooks.BuildPayload(webhooks.PayloadEnvelope{
		AccountID: in.Event.AccountID, SubscriptionID: in.SubscriptionID, EventID: in.Event.ID,
		Timestamp: now, EventType: in.Event.Type, WebhookName: in.WebhookName,
		Data: in.Event.Data, ToolName: in.ToolName,
	})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("build payload: %v", err), "InvalidPayload", err)
	}
	return payload, nil
}

// PurgeOldDeliveries is started by the retention Schedule: it deletes
// delivery records older than retentionDays in bounded batches.
func PurgeOldDeliveries(ctx workflow.Context, retentionDays int) (int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var deleted int64
	err := workflow.ExecuteActivity(ctx, deliveries.PurgeDeliveriesName, retentionDays).Get(ctx, &deleted)
	return deleted, err
}
