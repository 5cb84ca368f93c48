package webhooksettings

import (
	"context"
	"errors"
	"time"

	"github.com/jobhooks/jobhooks/subscriptions"
)

// Service is the delivery settings use cases that the REST API and the web
// UI both call: each checks the caller's access to the webhook with the
// subscriptions' rules (reading the settings as reading the webhook,
// changing them as updating it), validates and stores.
type Service struct {
	store *Store
	now   func() time.Time
}

// NewService returns the use cases over store.
func NewService(store *Store) (*Service, error) {
	if store == nil {
		return nil, errors.New("webhooksettings: a Store is required")
	}
	return &Service{store: store, now: time.Now}, nil
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
	return s.store.Get(ctx, a.Account().ID, webhookID)
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
	return s.store.Update(ctx, a.Account().ID, webhookID, u, now)
}
