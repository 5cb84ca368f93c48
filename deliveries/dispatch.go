package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
)

// RetryPolicy is the delivery backoff, carried in each delivery workflow's
// input so a configuration change never alters a running workflow's replay.
type RetryPolicy struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaximumInterval    time.Duration
	MaximumAttempts    int32
	AttemptTimeout     time.Duration
	RetryAfterMax      time.Duration
}

// Service starts the workflows that deliver events: ingestion, the fan-out
// activity, test deliveries and redeliveries all go through it.
type Service struct {
	temporal  client.Client
	store     *Store
	taskQueue string
	namespace string
	toolName  string
	retry     RetryPolicy
}

// NewService returns a Service starting workflows on cfg's task queue.
func NewService(tc client.Client, store *Store, cfg config.Config) *Service {
	return &Service{
		temporal: tc, store: store, taskQueue: cfg.TemporalTaskQueue, namespace: cfg.TemporalNamespace, toolName: cfg.PayloadToolName,
		retry: RetryPolicy{
			InitialInterval:    cfg.DeliveryRetryInitial,
			BackoffCoefficient: cfg.DeliveryRetryBackoff,
			MaximumInterval:    cfg.DeliveryRetryMaxInterval,
			MaximumAttempts:    MaxAttempts,
			AttemptTimeout:     cfg.DeliveryTimeout,
			RetryAfterMax:      cfg.DeliveryRetryAfterMax,
		},
	}
}

// Store returns the records store the service writes through.
func (s *Service) Store() *Store { return s.store }

// Ingest matches the event's first page of subscriptions and starts the
// event's workflow with them, which makes the first attempt of each delivery
// and hands the ones that need retries to their own delivery workflows.
// Matching here, at ingestion, lets the workflow start with WebhookIds
// already set (operators find it by webhook while it runs) and spares it a
// step and a search-attribute write. The workflow id is the event id:
// ingesting the same event again (same caller eventId) starts nothing new.
func (s *Service) Ingest(ctx context.Context, ev webhooks.Event) error {
	page, err := s.store.SubscriptionsForEvent(ctx, MatchInput{
		AccountID: ev.AccountID, EventType: ev.Type, JobID: ev.Data.JobID, Limit: EventPageSize,
	})
	if err != nil {
		return unavailable(fmt.Errorf("ingest event %s: %w", ev.ID, err))
	}
	attrs := []temporal.SearchAttributeUpdate{
		SearchAccountID.ValueSet(ev.AccountID),
		SearchEventType.ValueSet(ev.Type),
		SearchJobID.ValueSet(ev.Data.JobID),
		SearchRunID.ValueSet(ev.Data.RunID),
	}
	if ids := page.IDs(); len(ids) > 0 {
		attrs = append(attrs, SearchWebhookIDs.ValueSet(ids))
	}
	opts := client.StartWorkflowOptions{
		ID:                       EventWorkflowID(ev.ID),
		TaskQueue:                s.taskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		EnableEagerStart:         true,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
	}
	_, err = s.execute(ctx, opts, EventWorkflowName, EventInput{
		Event: ev, ToolName: s.toolName, AcceptedAt: time.Now(), Retry: s.retry,
		BatchedFirstAttempts: true, FirstPage: &page,
	})
	if err != nil && !alreadyStarted(err) {
		return unavailable(fmt.Errorf("start event workflow %s: %w", ev.ID, err))
	}
	return nil
}

// StartDelivery starts (or finds) the delivery workflow of in. Starting the
// same delivery twice is harmless: the workflow id is deterministic and a
// closed or running workflow with that id is never started again. A
// delivery handed over for retries starts with the status "retrying".
func (s *Service) StartDelivery(ctx context.Context, workflowID string, in DeliveryInput) (client.WorkflowRun, error) {
	attrs := []temporal.SearchAttributeUpdate{
		SearchAccountID.ValueSet(in.Event.AccountID),
		SearchWebhookID.ValueSet(in.SubscriptionID),
		SearchEventType.ValueSet(in.Event.Type),
		SearchJobID.ValueSet(in.Event.Data.JobID),
		SearchRunID.ValueSet(in.Event.Data.RunID),
	}
	if in.AttemptsMade > 0 {
		attrs = append(attrs, SearchDeliveryStatus.ValueSet(StatusRetrying))
	}
	opts := client.StartWorkflowOptions{
		ID:                       workflowID,
		TaskQueue:                s.taskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		EnableEagerStart:         true,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
	}
	run, err := s.execute(ctx, opts, DeliveryWorkflowName, in)
	if err != nil && alreadyStarted(err) {
		return s.temporal.GetWorkflow(ctx, workflowID, ""), nil
	}
	if err != nil {
		return nil, fmt.Errorf("start delivery workflow %s: %w", workflowID, err)
	}
	return run, nil
}

// searchAttributesPropagation bounds how long a start retries after the
// search attributes were registered: Temporal's services learn of them at
// their next namespace cache refresh (system.namespaceCacheRefreshInterval,
// 2s by default).
const searchAttributesPropagation = 10 * time.Second

// execute starts a workflow; on a cluster that does not know the search
// attributes yet (API up before any worker) it registers them and retries
// until the frontend has refreshed its namespace cache.
func (s *Service) execute(ctx context.Context, opts client.StartWorkflowOptions, name string, arg any) (client.WorkflowRun, error) {
	run, err := s.temporal.ExecuteWorkflow(ctx, opts, name, arg)
	if err == nil || !missingSearchAttributeError(err) {
		return run, err
	}
	if err := EnsureSearchAttributes(ctx, s.temporal, s.namespace); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(searchAttributesPropagation)
	for {
		run, err = s.temporal.ExecuteWorkflow(ctx, opts, name, arg)
		if err == nil || !missingSearchAttributeError(err) || time.Now().After(deadline) {
			return run, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// DeliveryFor returns the workflow id and input of the delivery of ev to
// sub under the service's current retry policy (legacy fan-out activity).
func (s *Service) DeliveryFor(ev webhooks.Event, toolName string, sub MatchedSubscription) (string, DeliveryInput) {
	in := NewDeliveryInput(EventInput{Event: ev, ToolName: toolName, Retry: s.retry}, sub)
	return DeliveryWorkflowID(ev.ID, sub.ID), in
}

// NewDeliveryInput is the delivery of an ingested event to sub. Its id
// derives from the delivery workflow id, whether or not that workflow ever
// runs (it only does when the first attempt needs retries).
func NewDeliveryInput(in EventInput, sub MatchedSubscription) DeliveryInput {
	return DeliveryInput{
		DeliveryID: DeliveryIDFor(DeliveryWorkflowID(in.Event.ID, sub.ID)), SubscriptionID: sub.ID,
		WebhookName: sub.Name, Event: in.Event, ToolName: in.ToolName, Retry: in.Retry,
		EventAcceptedAt: in.AcceptedAt,
	}
}

// TestResult is what the test endpoint reports (spec 4.5).
type TestResult struct {
	DeliveryID string
	StatusCode int    // 0 when the endpoint gave no HTTP response
	Error      string // "" when the endpoint answered 2xx
}

// Test sends one signed test delivery to the subscription now, through the
// delivery workflow with a single attempt, and waits for its outcome.
func (s *Service) Test(ctx context.Context, accountID int64, subscriptionID string) (TestResult, error) {
	sub, err := s.store.SubscriptionForDispatch(ctx, accountID, subscriptionID)
	if err != nil {
		return TestResult{}, err
	}
	eventType := webhooks.EventRunCompleted
	if len(sub.EventTypes) > 0 {
		eventType = sub.EventTypes[0]
	}
	ev := webhooks.Event{ID: webhooks.NewID(webhooks.EventIDPrefix), AccountID: accountID, Type: eventType, Data: TestRunData(eventType, time.Now())}
	wfID := "test/" + sub.ID + "/" + ev.ID
	in := DeliveryInput{
		DeliveryID: DeliveryIDFor(wfID), SubscriptionID: sub.ID, WebhookName: sub.Name,
		Event: ev, ToolName: s.toolName, IsTest: true, SingleAttempt: true, Retry: s.retry,
	}
	run, err := s.StartDelivery(ctx, wfID, in)
	if err != nil {
		return TestResult{}, unavailable(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.retry.AttemptTimeout+DefaultTestWaitTimeout)
	defer cancel()
	var res DeliveryResult
	if err := run.Get(waitCtx, &res); err != nil {
		return TestResult{}, unavailable(fmt.Errorf("wait for test delivery %s: %w", wfID, err))
	}
	out := TestResult{DeliveryID: in.DeliveryID, StatusCode: res.StatusCode}
	if res.Status != StatusSucceeded {
		out.Error = res.Error
		if out.Error == "" {
			out.Error = "delivery " + res.Status
		}
	}
	return out, nil
}

// Redeliver sends the exact recorded body of a delivery again, as a new
// delivery (with its own id, retries and records).
func (s *Service) Redeliver(ctx context.Context, accountID int64, subscriptionID, deliveryID string) (string, error) {
	sub, err := s.store.SubscriptionForDispatch(ctx, accountID, subscriptionID)
	if err != nil {
		return "", err
	}
	d, err := s.store.Delivery(ctx, accountID, subscriptionID, deliveryID)
	if err != nil {
		return "", err
	}
	wfID := "redelivery/" + d.ID + "/" + webhooks.NewID("")
	in := DeliveryInput{
		DeliveryID: DeliveryIDFor(wfID), SubscriptionID: sub.ID, WebhookName: sub.Name,
		Event: webhooks.Event{ID: d.EventID, AccountID: accountID, Type: d.EventType,
			Data: webhooks.RunData{JobID: d.JobID, RunID: d.RunID}},
		ToolName: s.toolName, IsTest: d.IsTest, Payload: d.Payload, RedeliveryOf: d.ID, Retry: s.retry,
	}
	if err := s.store.CreatePending(ctx, in.AttemptInput(wfID, s.retry.MaximumAttempts)); err != nil {
		return "", unavailable(err)
	}
	if _, err := s.StartDelivery(ctx, wfID, in); err != nil {
		return "", unavailable(err)
	}
	return in.DeliveryID, nil
}

// TestRunData is the run a test delivery describes: realistic, clearly a test.
func TestRunData(eventType string, now time.Time) webhooks.RunData {
	status, code := webhooks.DefaultRunStatus(eventType)
	started := now.UTC().Add(-time.Minute).Format(webhooks.RunTimeFormat)
	d := webhooks.RunData{
		JobID: "0", JobName: "Webhook test", RunID: "0", EnvironmentID: "0", EnvironmentName: "Test",
		ToolVersion: "1.9.0", ProjectName: "Webhook test", ProjectID: "0",
		RunStatus: status, RunStatusCode: code, RunStatusMessage: status,
		RunReason: "Test delivery from the webhook settings", RunStartedAt: started,
	}
	switch eventType {
	case webhooks.EventRunCompleted:
		d.RunFinishedAt = now.UTC().Format(webhooks.RunTimeFormat)
	case webhooks.EventRunErrored:
		d.RunErroredAt = now.UTC().Format(webhooks.RunTimeFormat)
	}
	return d
}

func alreadyStarted(err error) bool {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &started)
}

func unavailable(err error) error {
	return &unavailableError{err: err}
}

// unavailableError is a Temporal failure shown to clients as 503 while its
// detail stays in the logs.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// As lets the API see an EUNAVAILABLE *webhooks.Error with a generic message.
func (e *unavailableError) As(target any) bool {
	if t, ok := target.(**webhooks.Error); ok {
		*t = webhooks.Errorf(webhooks.EUNAVAILABLE, "Delivery is temporarily unavailable; try again shortly.")
		return true
	}
	return false
}
