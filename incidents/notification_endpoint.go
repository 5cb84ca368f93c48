package incidents

import (
	"context"
	"errors"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// NotificationEndpoint is where an account hears of its webhooks'
// incidents. Its signing secret is never read back: it is shown once, when
// it is made.
type NotificationEndpoint struct {
	URL       string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ErrNoNotificationEndpoint: the account has none.
var ErrNoNotificationEndpoint = webhooks.Errorf(webhooks.ENOTFOUND, "This account has no notification endpoint.")

// NotificationEndpoint returns the account's endpoint, or
// ErrNoNotificationEndpoint.
func (s *Service) NotificationEndpoint(ctx context.Context, a subscriptions.Access) (NotificationEndpoint, error) {
	if err := mayRead(a); err != nil {
		return NotificationEndpoint{}, err
	}
	e, err := s.store.NotificationEndpoint(ctx, a.Account().ID)
	if err != nil {
		return NotificationEndpoint{}, err
	}
	return fromStored(e), nil
}

// PutNotificationEndpoint sets the account's endpoint URL, checked like a
// client_url (an EINVALID error naming "url" otherwise). An endpoint made
// by this call gets a new signing secret, returned this once; an endpoint
// that existed keeps its secret and "" is returned. Of concurrent calls
// that make the endpoint, exactly one makes it and gets the secret.
func (s *Service) PutNotificationEndpoint(ctx context.Context, a subscriptions.Access, url string) (NotificationEndpoint, string, error) {
	if err := mayWrite(a); err != nil {
		return NotificationEndpoint{}, "", err
	}
	if err := s.checkURL(ctx, url); err != nil {
		return NotificationEndpoint{}, "", err
	}
	accountID := a.Account().ID
	secret := secrets.NewHMACSecret()
	keyID, sealed := s.box.Seal(secret, webhooks.NotificationSecretAAD(accountID))
	// keepSecret: an existing endpoint keeps its secret; only an insert
	// stores the new one, so the secret returned is the one stored.
	e, created, err := s.store.PutNotificationEndpoint(ctx, StoredEndpoint{
		AccountID: accountID, URL: url, SecretKeyID: keyID, SecretCiphertext: sealed,
	}, true)
	if err != nil {
		return NotificationEndpoint{}, "", err
	}
	if !created {
		secret = ""
	}
	return fromStored(e), secret, nil
}

// RotateNotificationSecret gives the account's endpoint a new signing
// secret, returned this once; the previous one stops signing at once.
// ErrNoNotificationEndpoint when the account has none. The store changes
// only the secret, in one statement: a PUT or DELETE that lands while this
// runs is kept, never undone.
func (s *Service) RotateNotificationSecret(ctx context.Context, a subscriptions.Access) (NotificationEndpoint, string, error) {
	if err := mayWrite(a); err != nil {
		return NotificationEndpoint{}, "", err
	}
	accountID := a.Account().ID
	secret := secrets.NewHMACSecret()
	keyID, sealed := s.box.Seal(secret, webhooks.NotificationSecretAAD(accountID))
	e, err := s.store.RotateNotificationSecret(ctx, accountID, keyID, sealed)
	if err != nil {
		return NotificationEndpoint{}, "", err
	}
	return fromStored(e), secret, nil
}

// DeleteNotificationEndpoint removes the account's endpoint: notices are
// still recorded (no_endpoint), not sent. ErrNoNotificationEndpoint when
// it had none.
func (s *Service) DeleteNotificationEndpoint(ctx context.Context, a subscriptions.Access) error {
	if err := mayWrite(a); err != nil {
		return err
	}
	deleted, err := s.store.DeleteNotificationEndpoint(ctx, a.Account().ID)
	if err != nil {
		return err
	}
	if !deleted {
		return ErrNoNotificationEndpoint
	}
	return nil
}

// checkURL applies the client_url rules and the destination policy to a
// notification URL; its problems name the field "url".
func (s *Service) checkURL(ctx context.Context, url string) error {
	err := s.destinations.CheckURL(ctx, url)
	var e *webhooks.Error
	if err == nil || !errors.As(err, &e) || e.Code != webhooks.EINVALID {
		return err
	}
	return webhooks.FieldErrorf("url", "%s", strings.Replace(e.Message, "client_url", "url", 1))
}

func fromStored(e StoredEndpoint) NotificationEndpoint {
	return NotificationEndpoint{URL: e.URL, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}
