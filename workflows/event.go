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
// of subscriptions, makes the first attempt of every delivery as concurrent
// local activities, and hands each delivery that needs retries to its own
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
	if err := workflow.ExecuteLocalActivity(stepCtx, deliveries.MatchSubscriptionsName, match).Get(ctx, &page); err != nil {
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
	futures := make([]workflow.Future, len(page.Subscriptions))
	ids := make([]string, len(page.Subscriptions))
	for i, sub := range page.Subscriptions {
		din := deliveries.NewDeliveryInput(in, sub)
		payload, err := buildPayload(din, now)
		if err != nil {
			return done, err
		}
		din.Payload = payload
		inputs[i], ids[i] = din, sub.ID
		futures[i] = workflow.ExecuteLocalActivity(firstCtx, deliveries.AttemptDeliveryName,
			din.AttemptInput(eventWorkflowID, in.Retry.MaximumAttempts))
	}

	var retries []deliveries.DeliveryInput
	for i, f := range futures {
		var res deliveries.AttemptResult
		err := f.Get(ctx, &res)
		done.Matched++
		if err == nil {
			switch res.Status {
			case deliveries.StatusSucceeded:
				done.Succeeded++
			case deliveries.StatusFailed:
				done.Failed++
			default:
				done.Cancelled++
			}
			continue
		}
		retry, ok := handOff(inputs[i], err)
		if !ok {
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
	if err := workflow.UpsertTypedSearchAttributes(ctx, eventSearchAttributes(ids, done)...); err != nil {
		return done, fmt.Errorf("set event search attributes: %w", err)
	}
	if page.More && len(page.Subscriptions) > 0 {
		next := in
		next.After, next.Done = ids[len(ids)-1], done
		return done, workflow.NewContinueAsNewError(ctx, deliveries.EventWorkflowName, next)
	}
	return done, nil
}

// handOff decides what follows a first attempt that did not succeed: a
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
	if made >= in.Retry.MaximumAttempts {
		return in, false
	}
	if delay <= 0 {
		delay = in.Retry.InitialInterval
	}
	in.AttemptsMade, in.FirstRetryDelay = made, delay
	return in, true
}

// eventSearchAttributes lists the webhooks the event went to and, when any
// first attempt did not succeed, the worst outcome.
func eventSearchAttributes(ids []string, done deliveries.EventResult) []temporal.SearchAttributeUpdate {
	attrs := []temporal.SearchAttributeUpdate{deliveries.SearchWebhookIDs.ValueSet(ids)}
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
