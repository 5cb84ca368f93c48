// Package dispatch is what the API and UI call to deliver: it ingests
// events (group commits to PostgreSQL, then wakes the shards or own lanes
// that take them in Temporal), sends test deliveries, redeliveries and
// replays, and registers the search attributes the workflows carry.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// Options configure the service.
type Options struct {
	Namespace string
	TaskQueue string
	// ToolName is the payload's "<tool>Version" prefix.
	ToolName string
	// Shards is DELIVERY_SHARDS: how many shard workflows take deliveries
	// (the same in every process).
	Shards int
	// AttemptTimeout is DELIVERY_TIMEOUT: how long the test endpoint waits
	// for its attempt (the worker bounds the attempt itself).
	AttemptTimeout time.Duration
	// MaxGroupEvents bounds the events of one group commit (default 500).
	MaxGroupEvents int
	// Flushers is how many group commits may run at once (default 2).
	Flushers int
	// IngestLinger is how long a group commit under a steady stream of
	// events waits for more to share its statement (0: none).
	IngestLinger time.Duration
	// ReplayRate bounds how many deliveries a replay sends a second to
	// one webhook (default 10).
	ReplayRate int
	// ObserveGroupCommit, when set, sees every group commit: how many
	// events it stored and how long the statement took (metrics, tests).
	ObserveGroupCommit func(events int, took time.Duration)
	// TestWait bounds how long a test delivery waits for its outcome
	// beyond the attempt timeout (default 20s).
	TestWait time.Duration
}

// Service ingests events and sends test deliveries and redeliveries.
type Service struct {
	temporal  client.Client
	store     *deliveries.Store
	waker     *Waker
	committer *committer
	opts      Options
}

// NewService returns the service; its group commits run until ctx ends.
func NewService(ctx context.Context, tc client.Client, store *deliveries.Store, logger *slog.Logger, opts Options) *Service {
	if opts.MaxGroupEvents <= 0 {
		opts.MaxGroupEvents = 500
	}
	if opts.Flushers <= 0 {
		opts.Flushers = 2
	}
	if opts.TestWait <= 0 {
		opts.TestWait = 20 * time.Second
	}
	waker := NewWaker(tc, opts.Namespace, opts.TaskQueue, opts.Shards, logger)
	waker.FollowClaimPromises(store.ShardClaimPromises)
	waker.FollowRoundStarts(store.ShardRoundsBegun)
	c := &committer{store: store, routing: newRoutingCache(logger), waker: waker, groups: make(chan *ingestGroup), maxEvents: opts.MaxGroupEvents, linger: opts.IngestLinger, streamGap: defaultStreamGap,
		timeout: 10 * time.Second, observe: opts.ObserveGroupCommit}
	for range opts.Flushers {
		go c.flushLoop(ctx)
	}
	return &Service{temporal: tc, store: store, waker: waker, committer: c, opts: opts}
}

// Waker returns the service's waker.
func (s *Service) Waker() *Waker { return s.waker }

// TestResult is what the test endpoint reports (spec 4.5).
type TestResult struct {
	DeliveryID string
	StatusCode int    // 0 when the endpoint gave no HTTP response
	Error      string // "" when the endpoint answered 2xx
}

// Test sends one signed test delivery to the subscription now, in its own
// workflow with a single attempt, and waits for its outcome.
func (s *Service) Test(ctx context.Context, accountID int64, subscriptionID string) (TestResult, error) {
	sub, err := s.store.SubscriptionForDispatch(ctx, accountID, subscriptionID)
	if err != nil {
		return TestResult{}, err
	}
	eventType := webhooks.EventRunCompleted
	if len(sub.EventTypes) > 0 {
		eventType = sub.EventTypes[0]
	}
	now := time.Now()
	ev := webhooks.Event{ID: webhooks.NewID(webhooks.EventIDPrefix), AccountID: accountID, Type: eventType, Data: TestRunData(eventType, now)}
	sample := webhooks.PayloadEnvelope{
		AccountID: accountID, SubscriptionID: sub.ID, EventID: ev.ID, Timestamp: now.UTC(), EventType: eventType,
		WebhookName: sub.Name, Data: ev.Data, ToolName: s.opts.ToolName,
	}
	deliveryID := webhooks.NewDeliveryID()
	wfID := workflows.TestWorkflowID(sub.ID, deliveryID)
	opts := client.StartWorkflowOptions{
		ID: wfID, TaskQueue: s.opts.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAccountID.ValueSet(accountID), workflows.SearchWebhookID.ValueSet(sub.ID)),
		EnableEagerStart: true,
	}
	in := workflows.TestDeliveryInput{Test: webhooks.TestDelivery{
		DeliveryID: deliveryID, SubscriptionID: sub.ID, AccountID: accountID, EventID: ev.ID, EventType: eventType, Sample: sample,
	}}
	var run client.WorkflowRun
	err = withSearchAttributes(ctx, s.temporal, s.opts.Namespace, func() error {
		var err error
		run, err = s.temporal.ExecuteWorkflow(ctx, opts, workflows.TestWorkflowName, in)
		return err
	})
	if err != nil {
		return TestResult{}, unavailable(fmt.Errorf("start test delivery %s: %w", wfID, err))
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.opts.AttemptTimeout+s.opts.TestWait)
	defer cancel()
	var out workflows.TestDeliveryResult
	if err := run.Get(waitCtx, &out); err != nil {
		return TestResult{}, unavailable(fmt.Errorf("wait for test delivery %s: %w", wfID, err))
	}
	res := TestResult{DeliveryID: deliveryID, StatusCode: out.StatusCode}
	if out.Status != deliveries.StatusSucceeded {
		res.Error = out.Error
		if res.Error == "" {
			res.Error = "delivery " + out.Status
		}
	}
	return res, nil
}

// Redeliver sends the exact recorded body of a delivery again, as a new
// delivery (its own id, attempts and record) due now through the webhook's
// shard (whose claim moves it to the webhook's route when it has another),
// and returns its id. The new record exists when it returns.
func (s *Service) Redeliver(ctx context.Context, accountID int64, subscriptionID, deliveryID string) (string, error) {
	if _, err := s.store.SubscriptionForDispatch(ctx, accountID, subscriptionID); err != nil {
		return "", err
	}
	id, routed, err := s.store.CreateRedelivery(ctx, accountID, subscriptionID, deliveryID)
	if err != nil {
		var werr *webhooks.Error
		if errors.As(err, &werr) {
			return "", err
		}
		return "", unavailable(err)
	}
	s.waker.Wake([]deliveries.RoutedWebhook{routed})
	return id, nil
}

// WakeWebhook wakes whoever takes a webhook's deliveries now (its shard,
// by the lane key its row has, or its own lane): after a change that moved
// them, such as a client_url at another destination (migration 00041).
func (s *Service) WakeWebhook(ctx context.Context, id string) error {
	r, err := s.store.Route(ctx, id)
	if err != nil {
		return err
	}
	s.waker.Wake([]deliveries.RoutedWebhook{{SubscriptionID: r.ID, AccountID: r.AccountID, Route: r.Route, LaneKey: r.LaneKey}})
	return nil
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

func unavailable(err error) error {
	return &unavailableError{err: err}
}

// unavailableError is a dependency failure (PostgreSQL, Temporal) shown to
// clients as 503 while its detail stays in the logs.
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
