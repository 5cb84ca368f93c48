package activities

import (
	"context"
	"errors"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"go.temporal.io/sdk/temporal"
)

// Operator actions, sent as workflow Updates to the workflow that owns a
// webhook (workflows.RetryDeliveryUpdate and the others).
const (
	ActionRetry  = "retry"
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionProbe  = "probe"
)

// OperatorAction is an operator's request on one webhook.
type OperatorAction struct {
	Kind       string
	WebhookID  string
	DeliveryID string `json:",omitempty"` // ActionRetry
	Reason     string `json:",omitempty"`
}

// OperatorResult is what an action did.
type OperatorResult struct {
	DeliveryID string `json:",omitempty"` // the new delivery (ActionRetry)
	Route      string `json:",omitempty"` // the webhook's route after it
	Changed    bool   `json:",omitempty"`
}

// errOperator is an action that can never succeed as asked: the Update
// fails with its message and is not retried.
func errOperator(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), "OperatorRequestRefused", nil)
}

// Routes are the activities that change a webhook's route and wake whoever
// takes its deliveries then: an operator's Updates (ApplyOperatorAction)
// and an idle own lane's return to its shard (ReturnIdleToShard). Register
// it with the worker; build it with New.
type Routes struct {
	store *deliveries.Store
	wake  wakeups
}

// ApplyOperatorAction carries out an operator's Update: a new delivery of a
// recorded delivery's body (like the API's retry), or a pause or resume of
// the webhook's deliveries. It wakes whoever takes the webhook's
// deliveries next.
func (rt *Routes) ApplyOperatorAction(ctx context.Context, in OperatorAction) (OperatorResult, error) {
	route, err := rt.store.Route(ctx, in.WebhookID)
	if errors.Is(err, deliveries.ErrSubscriptionGone) || (err == nil && route.Deleted) {
		return OperatorResult{}, errOperator("webhook %s does not exist", in.WebhookID)
	}
	if err != nil {
		return OperatorResult{}, err
	}
	routed := deliveries.RoutedWebhook{SubscriptionID: route.ID, AccountID: route.AccountID, Route: route.Route, LaneKey: route.LaneKey}
	switch in.Kind {
	case ActionRetry:
		id, _, err := rt.store.CreateRedelivery(ctx, route.AccountID, route.ID, in.DeliveryID)
		if webhooks.ErrorCode(err) == webhooks.ENOTFOUND {
			return OperatorResult{}, errOperator("delivery %s is not one of webhook %s's", in.DeliveryID, in.WebhookID)
		}
		if err != nil {
			return OperatorResult{}, err
		}
		rt.wake.wake(ctx, routed)
		return OperatorResult{DeliveryID: id, Route: route.Route}, nil
	case ActionPause:
		moved, err := rt.store.SetRoute(ctx, deliveries.RouteChange{
			IDs: []string{route.ID}, From: []string{deliveries.RouteShared, deliveries.RouteOwn},
			To: deliveries.RoutePaused, Reason: pauseReason(in.Reason),
		})
		if err != nil {
			return OperatorResult{}, err
		}
		return OperatorResult{Route: deliveries.RoutePaused, Changed: len(moved) > 0}, nil
	case ActionResume:
		to, err := rt.resume(ctx, route.ID)
		if err != nil {
			return OperatorResult{}, err
		}
		if to == "" {
			return OperatorResult{Route: route.Route}, nil
		}
		routed.Route = to
		rt.wake.wake(ctx, routed)
		return OperatorResult{Route: to, Changed: true}, nil
	case ActionProbe:
		if err := rt.store.ProbeNow(ctx, route.ID); errors.Is(err, deliveries.ErrBreakerClosed) {
			return OperatorResult{}, errOperator("the breaker of webhook %s is not open (route %s): nothing to probe", in.WebhookID, route.Route)
		} else if err != nil {
			return OperatorResult{}, err
		}
		routed.Route = deliveries.RouteOwn
		rt.wake.wake(ctx, routed)
		return OperatorResult{Route: deliveries.RouteHeld, Changed: true}, nil
	}
	return OperatorResult{}, errOperator("unknown action %q", in.Kind)
}

// resume moves a paused webhook back to its shard, or to its own lane when
// it has a rate limit (the shard's move refuses it then), and says where
// ("": it was not paused).
func (rt *Routes) resume(ctx context.Context, id string) (string, error) {
	reasons := map[string]string{
		deliveries.RouteShared: "resumed by an operator",
		deliveries.RouteOwn:    "resumed by an operator; its rate limit is kept by its own lane",
	}
	for _, to := range []string{deliveries.RouteShared, deliveries.RouteOwn} {
		moved, err := rt.store.SetRoute(ctx, deliveries.RouteChange{
			IDs: []string{id}, From: []string{deliveries.RoutePaused}, To: to, Reason: reasons[to],
		})
		if err != nil {
			return "", err
		}
		if len(moved) > 0 {
			return to, nil
		}
	}
	return "", nil
}

func pauseReason(reason string) string {
	if reason == "" {
		return "paused by an operator"
	}
	return "paused by an operator: " + reason
}

// ReturnResult says what became of a webhook its own lane let go.
type ReturnResult struct {
	// Returned: it is back on its shard's route (false: it was not on its
	// own route any more, e.g. paused).
	Returned bool
}

// ReturnIdleToShard moves an idle own-lane webhook back to its shard, with
// whatever became pending meanwhile (its shard is woken for that). A
// webhook with a rate limit stays on its own route (the move's statement
// checks, as it moves): only its lane keeps the limit, and its next
// delivery starts the lane again.
func (rt *Routes) ReturnIdleToShard(ctx context.Context, subscriptionID string) (ReturnResult, error) {
	moved, err := rt.store.SetRoute(ctx, deliveries.RouteChange{
		IDs: []string{subscriptionID}, From: []string{deliveries.RouteOwn}, To: deliveries.RouteShared,
		Reason: "its own lane was idle",
	})
	if err != nil {
		return ReturnResult{}, err
	}
	for _, m := range moved {
		if m.HasPending {
			rt.wake.wake(ctx, m.RoutedWebhook)
		}
	}
	return ReturnResult{Returned: len(moved) > 0}, nil
}
