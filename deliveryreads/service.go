// Package deliveryreads is what the API and the web UI read of webhooks'
// deliveries: Recent Deliveries, the search, a webhook's health, breaker,
// in-flight limit and replays, each only ever of the caller's account.
package deliveryreads

import (
	"context"
	"errors"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Service reads delivery records for the front ends. Account-wide reads take
// a subscriptions.Access; the reads of one webhook take a Webhook, which
// only Service.Webhook returns, after checking the webhook is the account's.
type Service struct {
	store *deliveries.Store
}

// NewService returns the reads over store.
func NewService(store *deliveries.Store) *Service {
	return &Service{store: store}
}

// Webhook is one live webhook of an account, as Service.Webhook found it.
// Some records (the breaker, the in-flight limit) are kept by webhook id
// alone: taking a Webhook rather than an id is what keeps their reads to
// the caller's account.
type Webhook struct {
	accountID int64
	id        string
}

// ID is the webhook's id.
func (w Webhook) ID() string { return w.id }

// AccountID is the id of the account the webhook is of.
func (w Webhook) AccountID() int64 { return w.accountID }

var (
	errNoAccess  = errors.New("deliveryreads: Access did not come from Authorize")
	errNoWebhook = errors.New("deliveryreads: Webhook did not come from Service.Webhook")
)

func mayRead(a subscriptions.Access) error {
	if a.Account().ID == 0 {
		return errNoAccess
	}
	return nil
}

func checked(w Webhook) error {
	if w.accountID == 0 || w.id == "" {
		return errNoWebhook
	}
	return nil
}

// Webhook returns one of the account's live webhooks, or ENOTFOUND (another
// account's, a deleted or an unknown webhook alike).
func (s *Service) Webhook(ctx context.Context, a subscriptions.Access, webhookID string) (Webhook, error) {
	if err := mayRead(a); err != nil {
		return Webhook{}, err
	}
	if err := subscriptions.CheckID(webhookID); err != nil {
		return Webhook{}, err
	}
	if _, err := s.store.SubscriptionForDispatch(ctx, a.Account().ID, webhookID); err != nil {
		return Webhook{}, err
	}
	return Webhook{accountID: a.Account().ID, id: webhookID}, nil
}

// SearchDeliveries returns a page of the account's deliveries to its live
// webhooks, newest first, and how many match in all.
func (s *Service) SearchDeliveries(ctx context.Context, a subscriptions.Access, f deliveries.SearchFilter) ([]deliveries.Delivery, int64, error) {
	if err := mayRead(a); err != nil {
		return nil, 0, err
	}
	return s.store.SearchDeliveries(ctx, a.Account().ID, f)
}

// WebhookFlags says which of the account's webhooks were disabled
// automatically, and which are failing.
func (s *Service) WebhookFlags(ctx context.Context, a subscriptions.Access) (disabled, failing map[string]bool, err error) {
	if err := mayRead(a); err != nil {
		return nil, nil, err
	}
	return s.store.WebhookFlags(ctx, a.Account().ID)
}

// ListDeliveries returns a page of the webhook's deliveries, newest first,
// and how many match in all.
func (s *Service) ListDeliveries(ctx context.Context, w Webhook, f deliveries.ListFilter) ([]deliveries.Delivery, int64, error) {
	if err := checked(w); err != nil {
		return nil, 0, err
	}
	return s.store.ListDeliveries(ctx, w.accountID, w.id, f)
}

// Delivery returns one of the webhook's deliveries with its attempts and
// exact body, or ENOTFOUND.
func (s *Service) Delivery(ctx context.Context, w Webhook, deliveryID string) (deliveries.Delivery, error) {
	if err := checked(w); err != nil {
		return deliveries.Delivery{}, err
	}
	if !webhooks.IsDeliveryID(deliveryID) {
		// The database would refuse NUL or invalid UTF-8 with an error.
		return deliveries.Delivery{}, webhooks.Errorf(webhooks.ENOTFOUND, "Delivery not found.")
	}
	return s.store.Delivery(ctx, w.accountID, w.id, deliveryID)
}

// Health returns how the webhook's deliveries are going, or ENOTFOUND when
// it was deleted meanwhile.
func (s *Service) Health(ctx context.Context, w Webhook) (deliveries.Health, error) {
	if err := checked(w); err != nil {
		return deliveries.Health{}, err
	}
	return s.store.Health(ctx, w.accountID, w.id)
}

// Hourly returns the webhook's last 7 days hour by hour (hours without
// deliveries are absent).
func (s *Service) Hourly(ctx context.Context, w Webhook) ([]deliveries.Hour, error) {
	if err := checked(w); err != nil {
		return nil, err
	}
	return s.store.Hourly(ctx, w.accountID, w.id)
}

// Breaker returns the webhook's breaker as stored, or
// subscriptions.ErrNotFound when it was deleted meanwhile.
func (s *Service) Breaker(ctx context.Context, w Webhook) (deliveries.BreakerState, error) {
	if err := checked(w); err != nil {
		return deliveries.BreakerState{}, err
	}
	st, err := s.store.AccountBreaker(ctx, w.accountID, w.id)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		return deliveries.BreakerState{}, subscriptions.ErrNotFound
	}
	return st, err
}

// InFlightLimit returns the in-flight limit a worker last reported for the
// webhook, if one is fresh; false when its limit is the initial one.
func (s *Service) InFlightLimit(ctx context.Context, w Webhook) (deliveries.InFlightLimit, bool, error) {
	if err := checked(w); err != nil {
		return deliveries.InFlightLimit{}, false, err
	}
	return s.store.InFlightLimitOf(ctx, w.id)
}

// Replay returns one of the webhook's replays, or ENOTFOUND.
func (s *Service) Replay(ctx context.Context, w Webhook, replayID string) (deliveries.Replay, error) {
	if err := checked(w); err != nil {
		return deliveries.Replay{}, err
	}
	return s.store.Replay(ctx, w.accountID, w.id, replayID)
}

// CountReplayable says how many of the webhook's deliveries a replay since
// since with statuses would send now.
func (s *Service) CountReplayable(ctx context.Context, w Webhook, since time.Time, statuses []string) (int, error) {
	if err := checked(w); err != nil {
		return 0, err
	}
	return s.store.CountReplayable(ctx, w.accountID, w.id, since, statuses)
}
