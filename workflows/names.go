// Package workflows is the durable orchestration of deliveries: shard
// workflows that make the attempts of many webhooks' deliveries in shared
// rounds, a lane workflow for each webhook on its own route (a slow
// receiver, an open breaker, a rate limit), the operator's Updates on
// both, test delivery, replay and notice workflows, and the scheduled
// maintenance (retention, a sweeper of shards and lanes whose wake-up was
// lost).
package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Names of the workflows and schedules, as registered with the worker and
// shown in the Temporal Web UI. Activities are registered under their
// method names (DeliverShardRound, DeliverDue, AttemptTest,
// WakeOverdueWebhooks, PurgeDeliveryRecords, ...), unique across the
// activities' types.
const (
	ShardWorkflowName     = "DeliverShard"
	LaneWorkflowName      = "DeliverToWebhook"
	TestWorkflowName      = "SendTestDelivery"
	RetentionWorkflowName = "PurgeOldDeliveries"
	SweepWorkflowName     = "WakeOverdueWebhooks"
	NoticeWorkflowName    = "SendNotice"
	ReplayWorkflowName    = "ReplayDeliveries"
	RetentionScheduleID   = "webhooks-delivery-retention"
	SweepScheduleID       = "webhooks-wake-overdue"
)

// ReplayWorkflowID is the id of a replay's workflow.
func ReplayWorkflowID(replayID string) string { return "replay/" + replayID }

// WakeSignal tells a shard or a lane that deliveries are due.
const WakeSignal = "wake"

// LaneWorkflowID is the id of a webhook's lane; the ingestion statement
// records the same id on the skipped deliveries of an inactive webhook
// ('webhook/' || subscription id); a claim records the workflow that
// claimed.
func LaneWorkflowID(subscriptionID string) string { return "webhook/" + subscriptionID }

// TestWorkflowID is the id of a test delivery's workflow.
func TestWorkflowID(subscriptionID, deliveryID string) string {
	return "test/" + subscriptionID + "/" + deliveryID
}

// Custom search attributes of lanes and test deliveries, so the Temporal
// Web UI finds a webhook's workflows (WebhookId = "wsu_...") and an
// account's (WebhookAccountId = 42). Events, jobs and runs are found
// through the delivery records, which name the workflow and run.
var (
	SearchAccountID = temporal.NewSearchAttributeKeyInt64("WebhookAccountId")
	SearchWebhookID = temporal.NewSearchAttributeKeyKeyword("WebhookId")
)

// RegisterAll registers every workflow under its name (with a worker, or a
// replayer in tests).
func RegisterAll(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Shard, workflow.RegisterOptions{Name: ShardWorkflowName})
	r.RegisterWorkflowWithOptions(Lane, workflow.RegisterOptions{Name: LaneWorkflowName})
	r.RegisterWorkflowWithOptions(SendTestDelivery, workflow.RegisterOptions{Name: TestWorkflowName})
	r.RegisterWorkflowWithOptions(PurgeOldDeliveries, workflow.RegisterOptions{Name: RetentionWorkflowName})
	r.RegisterWorkflowWithOptions(WakeOverdueWebhooks, workflow.RegisterOptions{Name: SweepWorkflowName})
	r.RegisterWorkflowWithOptions(Replay, workflow.RegisterOptions{Name: ReplayWorkflowName})
	r.RegisterWorkflowWithOptions(SendNotice, workflow.RegisterOptions{Name: NoticeWorkflowName})
}
