package signingkeys

import (
	"context"
	"errors"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// DefaultOverlap is how long a rotated-out key keeps signing beside the
// new one unless configured (SIGNING_KEY_ROTATION_OVERLAP).
const DefaultOverlap = 24 * time.Hour

// Options are the service's settings.
type Options struct {
	// Overlap is how long a rotated-out key keeps signing and stays
	// published (0: DefaultOverlap).
	Overlap time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Service is the signing key use cases the API calls: reading an
// account's keys (as reading its webhooks), rotating them (as changing
// its webhooks), and publishing them to anyone.
type Service struct {
	store   *Store
	overlap time.Duration
	now     func() time.Time
}

// NewService returns the use cases over store.
func NewService(store *Store, opts Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("signingkeys: a Store is required")
	}
	if opts.Overlap <= 0 {
		opts.Overlap = DefaultOverlap
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: store, overlap: opts.Overlap, now: opts.Now}, nil
}

// errNoAccess refuses an Access that did not come from
// subscriptions.Service.Authorize.
var errNoAccess = errors.New("signingkeys: Access did not come from Authorize")

// errNoAccountKeys is what an unknown account's published keys are.
var errNoAccountKeys = webhooks.Errorf(webhooks.ENOTFOUND, "Account not found.")

// List returns the account's keys that sign now, the current one first,
// making its first key when it has none.
func (s *Service) List(ctx context.Context, a subscriptions.Access) ([]Key, error) {
	if a.Account().ID == 0 {
		return nil, errNoAccess
	}
	return s.store.Keys(ctx, a.Account().ID, s.now())
}

// Rotate gives the account a new current key, which signs at once; the
// one it replaces signs beside it for the overlap. It returns the keys
// that sign now.
func (s *Service) Rotate(ctx context.Context, a subscriptions.Access) ([]Key, error) {
	if a.Account().ID == 0 {
		return nil, errNoAccess
	}
	if err := a.WriteErr(); err != nil {
		return nil, err
	}
	return s.store.Rotate(ctx, a.Account().ID, s.now(), s.overlap)
}

// Published returns the public keys of the account named by accountID as
// it appears in a path, for anyone: a malformed or unknown account is not
// found. Like List it makes the account's first key, so a receiver that
// fetches the keys before its first delivery gets the key that will sign.
func (s *Service) Published(ctx context.Context, accountID string) ([]Key, error) {
	id, err := strconv.ParseInt(accountID, 10, 64)
	if err != nil || id <= 0 {
		return nil, errNoAccountKeys
	}
	keys, err := s.store.Keys(ctx, id, s.now())
	if errors.Is(err, ErrNoAccount) {
		return nil, errNoAccountKeys
	}
	return keys, err
}
