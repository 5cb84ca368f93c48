package activities

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks/deliveries"
)

// startConcurrency bounds concurrent workflow starts of one event.
const startConcurrency = 16

// MatchSubscriptions returns one page of the event's subscriptions (spec 6
// rules 1-2), for the event workflow.
func (a *Activities) MatchSubscriptions(ctx context.Context, in deliveries.MatchInput) (deliveries.MatchPage, error) {
	return a.deps.Store.SubscriptionsForEvent(ctx, in)
}

// StartDeliveryRetries starts the delivery workflow of each delivery whose
// first attempt, made by the event workflow, needs retries, then points each
// record at its delivery workflow, so Recent Deliveries names the workflow
// that holds its retries while it waits for the first of them. Running it
// again starts nothing new: delivery workflow ids are deterministic.
func (a *Activities) StartDeliveryRetries(ctx context.Context, ins []deliveries.DeliveryInput) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(startConcurrency)
	handovers := make([]deliveries.Handover, len(ins))
	for i, in := range ins {
		wfID := deliveries.DeliveryWorkflowID(in.Event.ID, in.SubscriptionID)
		handovers[i] = deliveries.Handover{DeliveryID: in.DeliveryID, WorkflowID: wfID}
		g.Go(func() error {
			_, err := a.deps.Service.StartDelivery(gctx, wfID, in)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return a.deps.Store.RepointDeliveries(ctx, handovers)
}

// StartEventDeliveries is the legacy fan-out: it matches the event to
// subscriptions and starts one delivery workflow per match. It stays for
// event workflows started before the event workflow made first attempts.
func (a *Activities) StartEventDeliveries(ctx context.Context, in deliveries.EventInput) (deliveries.StartDeliveriesResult, error) {
	ev := in.Event
	subs, err := a.deps.Store.AllSubscriptionsForEvent(ctx, ev.AccountID, ev.Type, ev.Data.JobID)
	if err != nil {
		return deliveries.StartDeliveriesResult{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(startConcurrency)
	for _, sub := range subs {
		wfID, din := a.deps.Service.DeliveryFor(ev, in.ToolName, sub)
		din.EventAcceptedAt = in.AcceptedAt
		g.Go(func() error {
			_, err := a.deps.Service.StartDelivery(gctx, wfID, din)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return deliveries.StartDeliveriesResult{}, err
	}
	return deliveries.StartDeliveriesResult{Matched: len(subs)}, nil
}
