package webhooksettings

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Service is the delivery settings use cases that the REST API and the web
// UI both call: each checks the caller's access to the webhook with the
// subscriptions' rules (reading the settings as reading the webhook,
// changing them as updating it), validates and stores.
type Service struct {
	store           *Store
	now             func() time.Time
	defaultOnOutage string
	waker           Waker
}

// Waker wakes the workflow that takes a webhook's deliveries
// (dispatch.Waker); a wake-up it loses is the sweeper's.
type Waker interface {
	Wake(routed []deliveries.RoutedWebhook)
}

// Option sets up a Service.
type Option func(*Service)

// DefaultOnOutage is the on_outage of webhooks that chose none (the
// operator's DELIVERY_ON_OUTAGE); without it, deliveries.OnOutageRetry.
func DefaultOnOutage(mode string) Option {
	return func(s *Service) { s.defaultOnOutage = mode }
}

// WakeLanes has the service wake the own lane of a webhook that a rate
// limit moved there with deliveries pending. Without it, the sweeper does
// (WakeOverdueWebhooks), a minute late.
func WakeLanes(w Waker) Option {
	return func(s *Service) { s.waker = w }
}

// NewService returns the use cases over store.
func NewService(store *Store, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("webhooksettings: a Store is required")
	}
	s := &Service{store: store, now: time.Now, defaultOnOutage: deliveries.OnOutageRetry}
	for _, o := range opts {
		o(s)
	}
	if !deliveries.ValidOnOutage(s.defaultOnOutage) {
		return nil, fmt.Errorf("webhooksettings: the default on_outage must be %q or %q, not %q",
			deliveries.OnOutageRetry, deliveries.OnOutageHold, s.defaultOnOutage)
	}
	return s, nil
}

// DefaultOnOutage is the on_outage of webhooks that chose none.
func (s *Service) DefaultOnOutage() string { return s.defaultOnOutage }

// withDefaults fills what the webhook left to the service's defaults.
func (s *Service) withDefaults(st Settings) Settings {
	if st.OnOutage == "" {
		st.OnOutage, st.OnOutageIsDefault = s.defaultOnOutage, true
	}
	return st
}

// errNoAccess refuses an Access that did not come from
// subscriptions.Service.Authorize.
var errNoAccess = errors.New("webhooksettings: Access did not come from Authorize")

// Get returns the delivery settings of one webhook of the account (the
// defaults when none were set), or subscriptions.ErrNotFound.
func (s *Service) Get(ctx context.Context, a subscriptions.Access, webhookID string) (Settings, error) {
	if a.Account().ID == 0 {
		return Settings{}, errNoAccess
	}
	if err := subscriptions.CheckID(webhookID); err != nil {
		return Settings{}, err
	}
	st, err := s.store.Get(ctx, a.Account().ID, webhookID)
	if err != nil {
		return Settings{}, err
	}
	return s.withDefaults(st), nil
}

// Update applies u to the delivery settings of one webhook of the account
// and returns them. An invalid update changes nothing and returns
// webhooks.Problems.
func (s *Service) Update(ctx context.Context, a subscriptions.Access, webhookID string, u Update) (Settings, error) {
	if a.Account().ID == 0 {
		return Settings{}, errNoAccess
	}
	if err := a.WriteErr(); err != nil {
		return Settings{}, err
	}
	if err := subscriptions.CheckID(webhookID); err != nil {
		return Settings{}, err
	}
	now := s.now()
	if err := u.Problems(now).Err(); err != nil {
		return Settings{}, err
	}
	st, moved, err := s.store.update(ctx, a.Account().ID, webhookID, u, now)
	if err != nil {
		return Settings{}, err
	}
	s.wake(moved)
	return s.withDefaults(st), nil
}

// wake wakes whoever takes the deliveries of webhooks moved with deliveries
// pending.
func (s *Service) wake(moved []deliveries.Moved) {
	var routed []deliveries.RoutedWebhook
	for _, m := range moved {
		if m.HasPending {
			routed = append(routed, m.RoutedWebhook)
		}
	}
	if s.waker != nil && len(routed) > 0 {
		s.waker.Wake(routed)
	}
}
