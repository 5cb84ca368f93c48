package activities

import (
	"context"
	"log/slog"

	"github.com/jobhooks/jobhooks/deliveries"
)

// Waker wakes the workflows that take webhooks' deliveries, by each
// webhook's route: its shard or its own lane (signals them, starting those
// that are not running).
type Waker interface {
	WakeNow(ctx context.Context, webhooks []deliveries.RoutedWebhook) error
}

// wakeups wake whoever takes webhooks' deliveries after a change of
// theirs; one that fails is left to the sweeper.
type wakeups struct {
	waker  Waker // nil: none (tests)
	logger *slog.Logger
}

// wakeOwnLanes starts (or wakes) the own lanes of webhooks routed 'own';
// one that cannot be woken now is woken by the sweeper.
func (w wakeups) wakeOwnLanes(ctx context.Context, owned []deliveries.RoutedWebhook) {
	if w.waker == nil || len(owned) == 0 {
		return
	}
	if err := w.waker.WakeNow(ctx, owned); err != nil {
		w.logger.WarnContext(ctx, "cannot start a webhook's own lane; the sweeper will", "error", err.Error())
	}
}

// wake wakes whoever takes a webhook's deliveries; the sweeper covers a
// wake-up that fails.
func (w wakeups) wake(ctx context.Context, routed deliveries.RoutedWebhook) {
	if w.waker == nil || routed.Route == deliveries.RoutePaused {
		return
	}
	if err := w.waker.WakeNow(ctx, []deliveries.RoutedWebhook{routed}); err != nil {
		w.logger.WarnContext(ctx, "cannot wake a webhook's deliveries; the sweeper will", "subscription_id", routed.SubscriptionID, "error", err.Error())
	}
}
