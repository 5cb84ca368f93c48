package workflows

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
)

// Updates an operator sends, from the Temporal Web UI's "Send an Update"
// or `temporal workflow update execute`, to any shard ({task
// queue}/shard-{n}-of-{N}) or, while it has one, to the webhook's own lane
// (webhook/{id}). Each is validated before it is accepted: a refused
// Update leaves no trace in the history.
const (
	// RetryDeliveryUpdate sends a delivery again: a new delivery of its
	// recorded body, due now (like the API's retry). Input RetryDeliveryRequest;
	// result RetryDeliveryResult.
	RetryDeliveryUpdate = "RetryDelivery"
	// PauseWebhookUpdate holds a webhook's deliveries: pending and new ones
	// wait, durably, without attempts. Input WebhookRequest; result WebhookRouteResult.
	PauseWebhookUpdate = "PauseWebhook"
	// ResumeWebhookUpdate lets a paused webhook's deliveries go again, in
	// its shard (in its own lane when it has a rate limit). Input
	// WebhookRequest; result WebhookRouteResult.
	ResumeWebhookUpdate = "ResumeWebhook"
	// ProbeNowUpdate sends the next probe of a webhook whose breaker is
	// open now, instead of at the end of its backoff step (to its own lane,
	// webhook/{id}, which holds the probe timer; refused when the breaker
	// is not open). Input WebhookRequest; result WebhookRouteResult.
	ProbeNowUpdate = "ProbeNow"
)

// RetryDeliveryRequest is RetryDelivery's input.
type RetryDeliveryRequest struct {
	WebhookID  string `json:"webhook_id"`
	DeliveryID string `json:"delivery_id"`
}

// RetryDeliveryResult is RetryDelivery's result.
type RetryDeliveryResult struct {
	DeliveryID string `json:"delivery_id"` // the new delivery
	RetryOf    string `json:"retry_of"`
}

// WebhookRequest is PauseWebhook's and ResumeWebhook's input.
type WebhookRequest struct {
	WebhookID string `json:"webhook_id"`
	// Reason is shown with the webhook's route (optional, at most 500
	// characters).
	Reason string `json:"reason,omitempty"`
}

// WebhookRouteResult is PauseWebhook's and ResumeWebhook's result.
type WebhookRouteResult struct {
	WebhookID string `json:"webhook_id"`
	Route     string `json:"route"` // shared, own, paused or held, after the Update
	Changed   bool   `json:"changed"`
}

// operatorScope is what the workflow that takes an Update owns: one
// webhook (its own lane), or nothing in particular (a shard). A shard
// takes an Update for any webhook: a
// webhook's shard follows its destination (deliveries.LaneKey), which only
// the database knows, and an Update's effect is the database's and the
// wake-up of whoever takes the webhook's deliveries, wherever it was sent.
type operatorScope struct {
	WebhookID string // set for a webhook's own lane
}

var (
	webhookIDPattern  = regexp.MustCompile(`^wsu_[0-9A-Za-z]{1,64}$`)
	deliveryIDPattern = regexp.MustCompile(`^wdl_[0-9a-z]{1,64}$`)
)

// owns checks that the webhook may be this workflow's: a webhook id, and
// for a lane its own.
func (s operatorScope) owns(webhookID string) error {
	if !webhookIDPattern.MatchString(webhookID) {
		return fmt.Errorf("webhook_id %q is not a webhook id (wsu_...)", webhookID)
	}
	if s.WebhookID != "" {
		if webhookID != s.WebhookID {
			return fmt.Errorf("webhook %s is not this lane's (%s): send the Update to its own workflow", webhookID, s.WebhookID)
		}
		return nil
	}
	return nil
}

// registerOperatorUpdates registers the operator's Updates on an owning
// workflow; a change that gives it work is sent on poke.
func registerOperatorUpdates(ctx workflow.Context, scope operatorScope, poke workflow.Channel) error {
	var a *activities.Routes
	actCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	})
	nudge := func() {
		if poke != nil {
			poke.SendAsync(true)
		}
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, RetryDeliveryUpdate,
		func(ctx workflow.Context, req RetryDeliveryRequest) (RetryDeliveryResult, error) {
			var res activities.OperatorResult
			err := workflow.ExecuteLocalActivity(actCtx, a.ApplyOperatorAction, activities.OperatorAction{
				Kind: activities.ActionRetry, WebhookID: req.WebhookID, DeliveryID: req.DeliveryID,
			}).Get(ctx, &res)
			if err != nil {
				return RetryDeliveryResult{}, err
			}
			nudge()
			return RetryDeliveryResult{DeliveryID: res.DeliveryID, RetryOf: req.DeliveryID}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req RetryDeliveryRequest) error {
			if err := scope.owns(req.WebhookID); err != nil {
				return err
			}
			if !deliveryIDPattern.MatchString(req.DeliveryID) {
				return fmt.Errorf("delivery_id %q is not a delivery id (wdl_...)", req.DeliveryID)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	for _, u := range []struct {
		name string
		kind string
	}{{PauseWebhookUpdate, activities.ActionPause}, {ResumeWebhookUpdate, activities.ActionResume}, {ProbeNowUpdate, activities.ActionProbe}} {
		err := workflow.SetUpdateHandlerWithOptions(ctx, u.name,
			func(ctx workflow.Context, req WebhookRequest) (WebhookRouteResult, error) {
				var res activities.OperatorResult
				err := workflow.ExecuteLocalActivity(actCtx, a.ApplyOperatorAction, activities.OperatorAction{
					Kind: u.kind, WebhookID: req.WebhookID, Reason: req.Reason,
				}).Get(ctx, &res)
				if err != nil {
					return WebhookRouteResult{}, err
				}
				nudge()
				return WebhookRouteResult{WebhookID: req.WebhookID, Route: res.Route, Changed: res.Changed}, nil
			},
			workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req WebhookRequest) error {
				if len(req.Reason) > 500 {
					return errors.New("reason is longer than 500 characters")
				}
				return scope.owns(req.WebhookID)
			}})
		if err != nil {
			return err
		}
	}
	return nil
}
