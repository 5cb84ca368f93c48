// Package deliveries is the durable delivery of job-run events: the records
// of deliveries and attempts, and the service that starts the Temporal
// workflows (ingestion, test deliveries, redeliveries).
package deliveries

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
)

// Names of the workflows and activities, as registered with the worker and
// shown in the Temporal Web UI.
const (
	EventWorkflowName      = "DeliverJobRunEvent"
	DeliveryWorkflowName   = "DeliverWebhook"
	RetentionWorkflowName  = "PurgeOldDeliveries"
	MatchSubscriptionsName = "MatchSubscriptions"
	StartRetriesName       = "StartDeliveryRetries"
	AttemptDeliveryName    = "AttemptDelivery"
	// AttemptDeliveriesName makes the first attempts of a page of an event's
	// deliveries together, in one local activity.
	AttemptDeliveriesName = "AttemptDeliveries"
	PurgeDeliveriesName   = "PurgeDeliveryRecords"
	RecordFailureName     = "RecordDeliveryFailure"
	RetentionScheduleID   = "webhooks-delivery-retention"
	MaxAttempts           = 6 // the first try plus the five retries of spec 6.4
	// EventPageSize is how many subscriptions one run of an event workflow
	// delivers to; a larger fan-out continues as new with the next page. It
	// bounds the history of a run and keeps the WebhookIds search attribute
	// under Temporal's 2 KiB limit per value (50 ids of 30 bytes).
	EventPageSize          = 50
	DefaultTestWaitTimeout = 20 * time.Second
)

// ErrorTypeAttemptFailed is the ApplicationError type of an attempt that
// ran and was recorded; its details carry an AttemptResult. Any other error
// from the attempt activity means the attempt could not run or be recorded.
const ErrorTypeAttemptFailed = "DeliveryAttemptFailed"

// Delivery statuses, as stored and as shown by the API.
const (
	StatusPending   = "pending"
	StatusRetrying  = "retrying"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Statuses lists every delivery status.
var Statuses = []string{StatusPending, StatusRetrying, StatusSucceeded, StatusFailed, StatusCancelled}

// Legacy names: event workflows started before the event workflow made the
// first attempts itself ran LegacyEventWorkflowName, whose activity started
// one delivery workflow per subscription. The worker keeps them registered
// so such workflows still in flight (or being replayed) complete.
const (
	LegacyEventWorkflowName = "JobRunEvent"
	LegacyStartDeliveries   = "StartEventDeliveries"
)

// Custom search attributes of the event and delivery workflows, so the
// Temporal Web UI can filter by them. The worker registers them when missing.
// An event workflow lists the webhooks it delivered to in WebhookIds; a
// delivery workflow (retries, tests, redeliveries) names its one WebhookId.
var (
	SearchAccountID      = temporal.NewSearchAttributeKeyInt64("WebhookAccountId")
	SearchWebhookID      = temporal.NewSearchAttributeKeyKeyword("WebhookId")
	SearchWebhookIDs     = temporal.NewSearchAttributeKeyKeywordList("WebhookIds")
	SearchEventType      = temporal.NewSearchAttributeKeyKeyword("WebhookEventType")
	SearchJobID          = temporal.NewSearchAttributeKeyKeyword("WebhookJobId")
	SearchRunID          = temporal.NewSearchAttributeKeyKeyword("WebhookRunId")
	SearchDeliveryStatus = temporal.NewSearchAttributeKeyKeyword("WebhookDeliveryStatus")
)

// EventInput is the input of the event workflow. It carries no secret.
type EventInput struct {
	Event webhooks.Event
	// ToolName is the payload's "<tool>Version" prefix at ingestion time.
	ToolName string
	// AcceptedAt is when the API accepted the event (for the lag metric).
	AcceptedAt time.Time
	// Retry is the delivery policy at ingestion time (zero in legacy input).
	Retry RetryPolicy
	// BatchedFirstAttempts is set by the API since the 2026-11-23 release:
	// the first attempts of a page run in one local activity
	// (AttemptDeliveries) rather than one each. Event workflows started
	// before it carry false and replay their recorded per-delivery
	// activities; carrying the choice in the input costs nothing per
	// workflow, unlike workflow.GetVersion (a marker and a search attribute
	// upsert, each a write on the server).
	BatchedFirstAttempts bool
	// FirstPage, when set, is the first page of subscriptions, matched by
	// the API at ingestion (which also set WebhookIds at the start, so the
	// workflow neither matches nor upserts it for that page). Nil for later
	// pages and for workflows started before the 2026-11-23 release.
	FirstPage *MatchPage
	// After is the matching cursor: a run continued as new delivers to the
	// subscriptions after this id. Done carries the earlier runs' counts.
	After string
	Done  EventResult
}

// EventResult counts what an event's first attempts gave, over all runs.
type EventResult struct {
	Matched   int
	Succeeded int
	Failed    int
	Cancelled int
	// Retrying were handed to their own delivery workflows for retries.
	Retrying int
}

// MatchInput asks for one page of an event's subscriptions.
type MatchInput struct {
	AccountID int64
	EventType string
	JobID     string
	After     string // subscription id cursor, "" for the first page
	Limit     int
}

// MatchPage is one page of matched subscriptions, in id order.
type MatchPage struct {
	Subscriptions []MatchedSubscription
	More          bool // a further page may exist
}

// IDs are the page's subscription ids, in order.
func (p MatchPage) IDs() []string {
	ids := make([]string, len(p.Subscriptions))
	for i, sub := range p.Subscriptions {
		ids[i] = sub.ID
	}
	return ids
}

// DeliveryInput is the input of one delivery workflow (event x
// subscription). It carries no secret: the attempt activity reads it.
type DeliveryInput struct {
	DeliveryID     string // wdl_..., stable across retries, sent as a header
	SubscriptionID string
	WebhookName    string
	Event          webhooks.Event
	ToolName       string
	IsTest         bool
	// Payload, when set, is sent as is (redelivery of a recorded body);
	// otherwise the workflow builds it once from the event.
	Payload      []byte
	RedeliveryOf string
	// EventAcceptedAt is when the API accepted the event; zero for tests
	// and redeliveries, which have no ingestion to measure from.
	EventAcceptedAt time.Time
	// SingleAttempt disables retries (test deliveries).
	SingleAttempt bool
	Retry         RetryPolicy
	// AttemptsMade is how many attempts the event workflow already made
	// before it handed this delivery over for retries (0: none), and
	// FirstRetryDelay how long to wait before the next one.
	AttemptsMade    int32
	FirstRetryDelay time.Duration
}

// AttemptInput is what the attempt activity needs to attempt in within the
// workflow workflowID, which makes at most maxAttempts attempts.
func (in DeliveryInput) AttemptInput(workflowID string, maxAttempts int32) AttemptInput {
	return AttemptInput{
		DeliveryID: in.DeliveryID, WorkflowID: workflowID, SubscriptionID: in.SubscriptionID,
		AccountID: in.Event.AccountID, EventID: in.Event.ID, EventType: in.Event.Type,
		JobID: in.Event.Data.JobID, RunID: in.Event.Data.RunID, IsTest: in.IsTest,
		RedeliveryOf: in.RedeliveryOf, Payload: in.Payload, MaxAttempts: maxAttempts,
		AttemptsMade: in.AttemptsMade, AttemptTimeout: in.Retry.AttemptTimeout,
		RetryAfterMax: in.Retry.RetryAfterMax, EventAcceptedAt: in.EventAcceptedAt,
	}
}

// AttemptInput is what the attempt activity gets: the exact body and the
// ids it records under.
type AttemptInput struct {
	DeliveryID     string
	WorkflowID     string
	SubscriptionID string
	AccountID      int64
	EventID        string
	EventType      string
	JobID          string
	RunID          string
	IsTest         bool
	RedeliveryOf   string
	Payload        []byte
	MaxAttempts    int32
	// AttemptsMade is added to the activity's own attempt number: a
	// delivery workflow taking over after the first attempt numbers from 2.
	AttemptsMade   int32
	AttemptTimeout time.Duration
	RetryAfterMax  time.Duration
	// EventAcceptedAt is DeliveryInput.EventAcceptedAt, for the lag metric.
	EventAcceptedAt time.Time
}

// AttemptResult is the outcome of the attempt that ended a delivery, or of
// one first attempt in AttemptDeliveries' results, where "retrying" means the
// delivery needs retries (its attempt failed and may succeed again, or could
// not be made or recorded).
type AttemptResult struct {
	Status     string // succeeded, failed or cancelled (retrying: see above)
	StatusCode int    // HTTP status; 0 when no response
	Error      string // why it failed or was cancelled
	Attempts   int32
	// RetryDelay is the wait a failed attempt's Retry-After asked for,
	// bounded by the policy; zero means the policy's backoff.
	RetryDelay time.Duration
}

// DeliveryResult is the delivery workflow's result.
type DeliveryResult = AttemptResult

// StartDeliveriesResult is what the legacy fan-out activity reports.
type StartDeliveriesResult struct {
	Matched int
}

// EventWorkflowID is the id of an event's workflow.
func EventWorkflowID(eventID string) string { return "event/" + eventID }

// DeliveryWorkflowID is the id of the delivery of an event to a subscription.
func DeliveryWorkflowID(eventID, subscriptionID string) string {
	return "delivery/" + eventID + "/" + subscriptionID
}

// DeliveryIDFor derives a delivery id from its workflow id, so the id is
// stable across retries, replays and crashes without storing it anywhere.
func DeliveryIDFor(workflowID string) string {
	return webhooks.DeliveryIDPrefix + hashID(workflowID)
}

// EventIDFor maps a caller's event id to a wev_ id: the same caller id for
// the same account always gives the same event, hence one delivery.
func EventIDFor(accountID int64, callerEventID string) string {
	return webhooks.EventIDPrefix + hashID(strconv.FormatInt(accountID, 10)+"/"+callerEventID)
}

func hashID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:26]
}
