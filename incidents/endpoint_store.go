package incidents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// StoredEndpoint is an account's notification endpoint as stored, its secret
// sealed (the secret signs each notice).
type StoredEndpoint struct {
	AccountID        int64
	URL              string
	SecretKeyID      string
	SecretCiphertext []byte
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// NotificationEndpoint returns the account's endpoint, or
// ErrNoNotificationEndpoint.
func (s *Store) NotificationEndpoint(ctx context.Context, accountID int64) (StoredEndpoint, error) {
	r, err := s.q.GetNotificationEndpoint(ctx, accountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredEndpoint{}, ErrNoNotificationEndpoint
	}
	if err != nil {
		return StoredEndpoint{}, fmt.Errorf("notification endpoint of account %d: %w", accountID, err)
	}
	return StoredEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// PutNotificationEndpoint sets the account's endpoint; keepSecret keeps the
// sealed secret it has (e.SecretKeyID and e.SecretCiphertext are then
// ignored). It says whether the endpoint is new.
func (s *Store) PutNotificationEndpoint(ctx context.Context, e StoredEndpoint, keepSecret bool) (StoredEndpoint, bool, error) {
	r, err := s.q.PutNotificationEndpoint(ctx, dbq.PutNotificationEndpointParams{AccountID: e.AccountID, Url: e.URL,
		SecretKeyID: e.SecretKeyID, SecretCiphertext: e.SecretCiphertext, KeepSecret: keepSecret})
	if err != nil {
		return StoredEndpoint{}, false, fmt.Errorf("set the notification endpoint of account %d: %w", e.AccountID, err)
	}
	return StoredEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, r.Created, nil
}

// RotateNotificationSecret replaces the sealed secret of the account's
// endpoint, leaving its URL as it is now, or returns
// ErrNoNotificationEndpoint: an endpoint is never made here.
func (s *Store) RotateNotificationSecret(ctx context.Context, accountID int64, secretKeyID string, secretCiphertext []byte) (StoredEndpoint, error) {
	r, err := s.q.RotateNotificationSecret(ctx, dbq.RotateNotificationSecretParams{AccountID: accountID,
		SecretKeyID: secretKeyID, SecretCiphertext: secretCiphertext})
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredEndpoint{}, ErrNoNotificationEndpoint
	}
	if err != nil {
		return StoredEndpoint{}, fmt.Errorf("rotate the notification secret of account %d: %w", accountID, err)
	}
	return StoredEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// DeleteNotificationEndpoint removes the account's endpoint; false when it
// had none.
func (s *Store) DeleteNotificationEndpoint(ctx context.Context, accountID int64) (bool, error) {
	n, err := s.q.DeleteNotificationEndpoint(ctx, accountID)
	if err != nil {
		return false, fmt.Errorf("delete the notification endpoint of account %d: %w", accountID, err)
	}
	return n > 0, nil
}

// SealedNotificationSecret is an account's notification endpoint secret as
// stored.
type SealedNotificationSecret struct {
	AccountID  int64
	KeyID      string
	Ciphertext []byte
}

// NotificationSecretsNotSealedWith lists up to limit notification endpoint
// secrets sealed with another key than keyID, of accounts after afterID.
func (s *Store) NotificationSecretsNotSealedWith(ctx context.Context, keyID string, afterID int64, limit int) ([]SealedNotificationSecret, error) {
	rows, err := s.q.NotificationSecretsNotSealedWith(ctx, dbq.NotificationSecretsNotSealedWithParams{KeyID: keyID, AfterID: afterID, BatchSize: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list notification secrets to reseal: %w", err)
	}
	out := make([]SealedNotificationSecret, len(rows))
	for i, r := range rows {
		out[i] = SealedNotificationSecret{AccountID: r.AccountID, KeyID: r.SecretKeyID, Ciphertext: r.SecretCiphertext}
	}
	return out, nil
}

// ResealNotificationSecret stores a secret sealed anew, if the row still
// holds old; false when it changed meanwhile.
func (s *Store) ResealNotificationSecret(ctx context.Context, old SealedNotificationSecret, keyID string, ciphertext []byte) (bool, error) {
	n, err := s.q.ResealNotificationSecret(ctx, dbq.ResealNotificationSecretParams{AccountID: old.AccountID, OldKeyID: old.KeyID,
		OldCiphertext: old.Ciphertext, NewKeyID: keyID, NewCiphertext: ciphertext})
	if err != nil {
		return false, fmt.Errorf("reseal the notification secret of account %d: %w", old.AccountID, err)
	}
	return n == 1, nil
}
