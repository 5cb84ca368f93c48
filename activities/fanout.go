package activities

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/acme/webhooks/deliveries"
)

// startConcurrency bounds concurrent workflow starts of one event.
const startConcurrency = 16

// StartEventDeliveries matches the event to subscriptions (spec 6 rules 1-2)
// and starts one delivery workflow per match. Running it again starts
// nothing new: delivery workflow ids are deterministic.
func (a *Activities) StartEventDeliveries(ctx context.Context, in deliveries.EventInput) (deliveries.StartDeliveriesResult, error) {
	ev := in.Event
	subs, err := a.deps.Store.SubscriptionsForEvent(ctx, ev.AccountID, ev.Type, ev.Data.JobID)
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
