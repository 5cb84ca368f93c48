package subscriptions

import (
	"context"
	"errors"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/netguard"
)

// Service is the subscription use cases that the REST API and the web UI
// both call: each checks the caller's access, validates, checks the
// destination and stores. The front ends only translate their wire and form
// formats to and from it.
type Service struct {
	store        *Store
	destinations *netguard.Policy
	waker        Waker
}

// Waker wakes whoever takes a webhook's deliveries now.
type Waker interface {
	WakeWebhook(ctx context.Context, id string) error
}

// Option sets up a Service.
type Option func(*Service)

// WakeMoved has the service wake a webhook's deliveries after its
// client_url changes: a webhook's shard follows its destination
// (deliveries.LaneKey), so deliveries due at the old one are the new
// shard's, which may be waiting for nothing. Without it (or when a wake
// fails), the sweeper does, DELIVERY_OVERDUE_GRACE late.
func WakeMoved(w Waker) Option {
	return func(s *Service) { s.waker = w }
}

// NewService returns the use cases over store, accepting only the client
// URLs destinations allows.
func NewService(store *Store, destinations *netguard.Policy, opts ...Option) (*Service, error) {
	if store == nil || destinations == nil {
		return nil, errors.New("subscriptions: a Store and a destination Policy are required")
	}
	s := &Service{store: store, destinations: destinations}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Access is a caller's standing in one account's webhooks, from Authorize:
// it may read them, and may change them when WriteErr is nil.
type Access struct {
	membership webhooks.Membership
	writeErr   error
}

// Account is the account the access is to.
func (a Access) Account() webhooks.Account { return a.membership.Account }

// WriteErr says why the caller may not change the account's webhooks, or is
// nil when it may.
func (a Access) WriteErr() error { return a.writeErr }

// mayRead refuses an Access that did not come from Authorize.
func (a Access) mayRead() error {
	if a.membership.Account.ID == 0 {
		return errors.New("subscriptions: Access did not come from Authorize")
	}
	return nil
}

func (a Access) mayWrite() error {
	if err := a.mayRead(); err != nil {
		return err
	}
	return a.writeErr
}

// Authorize resolves accountID as it appears in a path to the caller's
// access: a malformed id is not found, an account the caller does not
// belong to is forbidden, and the plan must include webhooks (spec 5.1).
// With write, a caller that may only read is refused as well.
func (s *Service) Authorize(p *webhooks.Principal, accountID string, write bool) (Access, error) {
	m, err := p.AccountMembership(accountID)
	if err != nil {
		return Access{}, err
	}
	if err := webhooks.CanReadWebhooks(m); err != nil {
		return Access{}, err
	}
	a := Access{membership: m, writeErr: webhooks.CanWriteWebhooks(p.Kind, m)}
	if write && a.writeErr != nil {
		return Access{}, a.writeErr
	}
	return a, nil
}

// CheckID returns ErrNotFound for anything that cannot be a subscription id,
// so it is not found without a lookup. Front ends that read a request body
// call it first, so a malformed id is not found whatever the body says.
func CheckID(id string) error {
	if !webhooks.IsSubscriptionID(id) {
		return ErrNotFound
	}
	return nil
}

// List returns a page of the account's subscriptions.
func (s *Service) List(ctx context.Context, a Access, limit int32, offset int64) (Page, error) {
	if err := a.mayRead(); err != nil {
		return Page{}, err
	}
	return s.store.List(ctx, a.Account().ID, limit, offset)
}

// Get returns one subscription of the account, or ErrNotFound.
func (s *Service) Get(ctx context.Context, a Access, id string) (webhooks.Subscription, error) {
	if err := a.mayRead(); err != nil {
		return webhooks.Subscription{}, err
	}
	if err := CheckID(id); err != nil {
		return webhooks.Subscription{}, err
	}
	return s.store.Get(ctx, a.Account().ID, id)
}

// Create stores in as a new subscription of the account, returning it and
// its hmac_secret (shown this once). An invalid input stores nothing and
// returns webhooks.Problems.
func (s *Service) Create(ctx context.Context, a Access, in webhooks.Subscription) (webhooks.Subscription, string, error) {
	if err := a.mayWrite(); err != nil {
		return webhooks.Subscription{}, "", err
	}
	in.AccountID = a.Account().ID
	if err := s.CheckNew(ctx, in); err != nil {
		return webhooks.Subscription{}, "", err
	}
	return s.store.Create(ctx, in)
}

// Update applies u to one subscription of the account. An invalid update
// changes nothing and returns webhooks.Problems.
func (s *Service) Update(ctx context.Context, a Access, id string, u webhooks.SubscriptionUpdate) (webhooks.Subscription, error) {
	if err := a.mayWrite(); err != nil {
		return webhooks.Subscription{}, err
	}
	if err := CheckID(id); err != nil {
		return webhooks.Subscription{}, err
	}
	if err := s.CheckUpdate(ctx, u); err != nil {
		return webhooks.Subscription{}, err
	}
	updated, err := s.store.Update(ctx, a.Account().ID, id, u)
	if err == nil && u.ClientURL != nil && s.waker != nil {
		_ = s.waker.WakeWebhook(ctx, id) // the sweeper covers a wake-up that fails
	}
	if err == nil && ((u.Active != nil && !*u.Active) || u.ClientURL != nil) {
		settle(ctx)
	}
	return updated, err
}

// settle waits, after a change that must stop or re-sign attempts
// committed, until no attempt can start with the state before it
// (webhooks.AttemptStateFreshFor), so the answer that follows holds.
func settle(ctx context.Context) {
	t := time.NewTimer(webhooks.AttemptStateFreshFor)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Delete deletes one subscription of the account.
func (s *Service) Delete(ctx context.Context, a Access, id string) error {
	if err := a.mayWrite(); err != nil {
		return err
	}
	if err := CheckID(id); err != nil {
		return err
	}
	if err := s.store.Delete(ctx, a.Account().ID, id); err != nil {
		return err
	}
	settle(ctx)
	return nil
}

// Bounds of how long a rotated secret stays valid. Even "at once" keeps it
// MinPreviousSecretLifetime: attempts already being signed with the
// secrets loaded before the rotation (webhooks.AttemptStateFreshFor) go out
// before it expires, never after.
const (
	MaxPreviousSecretLifetime = 7 * 24 * time.Hour
	MinPreviousSecretLifetime = 2 * time.Second
)

// RotateSecret gives one subscription of the account a new hmac_secret and
// returns it with the time the previous one stops being valid:
// expirePrevious from now, and at least MinPreviousSecretLifetime.
func (s *Service) RotateSecret(ctx context.Context, a Access, id string, expirePrevious time.Duration) (string, *time.Time, error) {
	if err := a.mayWrite(); err != nil {
		return "", nil, err
	}
	if err := CheckID(id); err != nil {
		return "", nil, err
	}
	if expirePrevious < 0 || expirePrevious > MaxPreviousSecretLifetime {
		return "", nil, webhooks.FieldErrorf("expire_previous_in_seconds", "expire_previous_in_seconds must be between 0 and %d.", int(MaxPreviousSecretLifetime.Seconds()))
	}
	t := time.Now().Add(max(expirePrevious, MinPreviousSecretLifetime))
	expires := &t
	secret, err := s.store.RotateSecret(ctx, a.Account().ID, id, expires)
	if err != nil {
		return "", nil, err
	}
	settle(ctx)
	return secret, expires, nil
}

// CheckNew returns every problem Create would find with in, as
// webhooks.Problems, or nil. A form that found a problem of its own (a job
// id it could not read) calls it to show the others at the same time.
func (s *Service) CheckNew(ctx context.Context, in webhooks.Subscription) error {
	return s.withDestination(ctx, in.Problems(), &in.ClientURL)
}

// CheckUpdate is CheckNew for Update.
func (s *Service) CheckUpdate(ctx context.Context, u webhooks.SubscriptionUpdate) error {
	return s.withDestination(ctx, u.Problems(), u.ClientURL)
}

// withDestination adds the destination policy's verdict on a client_url
// that is present and has no problem of its own. It comes last, so a
// caller that reports one problem reports a field problem first, as the
// API always has.
func (s *Service) withDestination(ctx context.Context, p webhooks.Problems, clientURL *string) error {
	if clientURL != nil && !p.Has("client_url") {
		if err := s.destinations.CheckURL(ctx, *clientURL); err != nil {
			var e *webhooks.Error
			if !errors.As(err, &e) || e.Code != webhooks.EINVALID {
				return err // the check itself failed: not the input's problem
			}
			p = append(p, e)
		}
	}
	return p.Err()
}
