// Package incidents stores webhooks' incidents, the notices accounts get
// about them and their notification endpoints, and is what the API and the
// web UI call about an outage (the breaker: read it, probe now).
package incidents

import (
	"context"
	"errors"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Waker wakes the workflow that takes a webhook's deliveries
// (dispatch.Waker); a wake-up it loses is the sweeper's.
type Waker interface {
	Wake(routed []deliveries.RoutedWebhook)
}

// Service is the use cases; each checks the caller's access (a
// subscriptions.Access from Authorize) before it reads or changes anything.
type Service struct {
	breakers     *deliveries.Store
	store        *Store
	box          *secrets.Box
	destinations *netguard.Policy
	waker        Waker
}

// NewService returns the use cases over breakers (the webhooks' breakers)
// and store (notices and notification endpoints). box seals notification
// secrets, destinations says which notification URLs are allowed, waker
// wakes a webhook's lane for a probe.
func NewService(breakers *deliveries.Store, store *Store, box *secrets.Box, destinations *netguard.Policy, waker Waker) (*Service, error) {
	if breakers == nil || store == nil || box == nil || destinations == nil || waker == nil {
		return nil, errors.New("incidents: a deliveries Store, a Store, a Box, a destination Policy and a Waker are required")
	}
	return &Service{breakers: breakers, store: store, box: box, destinations: destinations, waker: waker}, nil
}

// ErrBreakerClosed: a probe was asked for while the breaker is closed.
var ErrBreakerClosed = webhooks.Errorf(webhooks.ECONFLICT,
	"The webhook's breaker is not open: its deliveries go as usual, and there is nothing to probe.")

// ErrNotHeld: a probe was asked for while the breaker is open but does not
// hold the webhook's deliveries (on_outage "retry"): they keep their retry
// schedule, and no probe goes.
var ErrNotHeld = webhooks.Errorf(webhooks.ECONFLICT,
	"The webhook's deliveries are not held: they keep their retry schedule (on_outage \"retry\"), so there is no probe to send.")

// mayRead refuses an Access that did not come from Authorize.
func mayRead(a subscriptions.Access) error {
	if a.Account().ID == 0 {
		return errors.New("incidents: Access did not come from Authorize")
	}
	return nil
}

func mayWrite(a subscriptions.Access) error {
	if err := mayRead(a); err != nil {
		return err
	}
	return a.WriteErr()
}

// Breaker returns the breaker of one of the account's live webhooks, or
// subscriptions.ErrNotFound (another account's webhook included). A
// closed breaker has no OpenedAt or NextProbeAt.
func (s *Service) Breaker(ctx context.Context, a subscriptions.Access, webhookID string) (deliveries.BreakerState, error) {
	if err := mayRead(a); err != nil {
		return deliveries.BreakerState{}, err
	}
	return s.breaker(ctx, a, webhookID)
}

func (s *Service) breaker(ctx context.Context, a subscriptions.Access, webhookID string) (deliveries.BreakerState, error) {
	if err := subscriptions.CheckID(webhookID); err != nil {
		return deliveries.BreakerState{}, err
	}
	st, err := s.breakers.AccountBreaker(ctx, a.Account().ID, webhookID)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		return deliveries.BreakerState{}, subscriptions.ErrNotFound
	}
	if err != nil {
		return deliveries.BreakerState{}, err
	}
	if !st.Open {
		st.OpenedAt, st.NextProbeAt = nil, nil
	}
	return st, nil
}

// ProbeNow makes the next probe of a webhook whose breaker is open due now
// and wakes its lane, which sends it (one pending delivery, signed as
// usual, not counted against its retries). It returns the breaker after
// the change, or ErrBreakerClosed.
func (s *Service) ProbeNow(ctx context.Context, a subscriptions.Access, webhookID string) (deliveries.BreakerState, error) {
	if err := mayWrite(a); err != nil {
		return deliveries.BreakerState{}, err
	}
	st, err := s.breaker(ctx, a, webhookID)
	if err != nil {
		return deliveries.BreakerState{}, err
	}
	if !st.Open {
		return deliveries.BreakerState{}, ErrBreakerClosed
	}
	if !st.Held {
		return deliveries.BreakerState{}, ErrNotHeld
	}
	if err := s.breakers.ProbeNow(ctx, webhookID); errors.Is(err, deliveries.ErrBreakerClosed) {
		return deliveries.BreakerState{}, ErrBreakerClosed // closed (or no longer held) meanwhile
	} else if err != nil {
		return deliveries.BreakerState{}, err
	}
	// The lane holds the probe timer: route own, whatever the held route.
	s.waker.Wake([]deliveries.RoutedWebhook{{SubscriptionID: webhookID, AccountID: st.AccountID, Route: deliveries.RouteOwn}})
	return s.breaker(ctx, a, webhookID)
}

// OpenBreakers says which of the account's live webhooks have their
// breaker open, and whether each holds its deliveries.
func (s *Service) OpenBreakers(ctx context.Context, a subscriptions.Access) (map[string]deliveries.OpenBreakerMark, error) {
	if err := mayRead(a); err != nil {
		return nil, err
	}
	return s.breakers.AccountOpenBreakers(ctx, a.Account().ID)
}

// Notices limits.
const (
	DefaultNotices = 10
	MaxNotices     = 100
)

// Notices returns the account's latest notices, newest first, at most
// limit (1 to MaxNotices).
func (s *Service) Notices(ctx context.Context, a subscriptions.Access, limit int) ([]Notice, error) {
	if err := mayRead(a); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxNotices {
		return nil, webhooks.FieldErrorf("limit", "limit must be an integer from 1 to %d, got %d.", MaxNotices, limit)
	}
	return s.store.Notices(ctx, a.Account().ID, limit)
}
