// Package subscriptions is the webhook subscription use cases that the API
// and the web UI both call (Service), over their PostgreSQL storage (Store).
package subscriptions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// Store is the subscriptions of every account. Every method is scoped to one
// account: another account's subscription id is simply not found.
type Store struct {
	pool *pgxpool.Pool
	q    *dbq.Queries
	box  *secrets.Box
}

// NewStore returns a Store on pool that seals hmac_secrets with box.
func NewStore(pool *pgxpool.Pool, box *secrets.Box) *Store {
	return &Store{pool: pool, q: dbq.New(pool), box: box}
}

// ErrNotFound is returned for an unknown, deleted or other account's
// subscription. Its message must not hint at permissions.
var ErrNotFound = webhooks.Errorf(webhooks.ENOTFOUND, "Webhook subscription not found.")

// Page is one page of an account's subscriptions.
type Page struct {
	Subscriptions []webhooks.Subscription
	Total         int64 // live subscriptions of the account
}

// List returns the account's subscriptions in creation order (then id),
// skipping offset and returning at most limit, with the total count taken
// from the same snapshot.
func (s *Store) List(ctx context.Context, accountID int64, limit int32, offset int64) (Page, error) {
	var page Page
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		total, err := q.CountSubscriptions(ctx, accountID)
		if err != nil {
			return err
		}
		rows, err := q.ListSubscriptions(ctx, dbq.ListSubscriptionsParams{AccountID: accountID, RowLimit: limit, RowOffset: offset})
		if err != nil {
			return err
		}
		page.Total = total
		page.Subscriptions = make([]webhooks.Subscription, 0, len(rows))
		for _, r := range rows {
			page.Subscriptions = append(page.Subscriptions, fromRow(dbq.GetSubscriptionRow(r)))
		}
		return nil
	})
	if err != nil {
		return Page{}, fmt.Errorf("list subscriptions of account %d: %w", accountID, err)
	}
	return page, nil
}

// Get returns one live subscription of the account, or ErrNotFound.
func (s *Store) Get(ctx context.Context, accountID int64, id string) (webhooks.Subscription, error) {
	row, err := s.q.GetSubscription(ctx, dbq.GetSubscriptionParams{ID: id, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.Subscription{}, ErrNotFound
	} else if err != nil {
		return webhooks.Subscription{}, fmt.Errorf("get subscription %s: %w", id, err)
	}
	return fromRow(row), nil
}

// Create stores a new subscription of in.AccountID with a fresh wsu_ id and
// hmac_secret. The secret is stored only encrypted and returned here once.
// in must have been validated.
func (s *Store) Create(ctx context.Context, in webhooks.Subscription) (webhooks.Subscription, string, error) {
	id := webhooks.NewID(webhooks.SubscriptionIDPrefix)
	secret := secrets.NewHMACSecret()
	keyID, sealed := s.box.Seal(secret, id)
	row, err := s.q.CreateSubscription(ctx, dbq.CreateSubscriptionParams{
		ID:               id,
		AccountID:        in.AccountID,
		Name:             in.Name,
		Description:      in.Description,
		ClientUrl:        in.ClientURL,
		EventTypes:       nonNil(in.EventTypes),
		JobIds:           nonNil(in.JobIDs),
		Active:           in.Active,
		SecretKeyID:      keyID,
		SecretCiphertext: sealed,
	})
	if err != nil {
		return webhooks.Subscription{}, "", fmt.Errorf("create subscription: %w", err)
	}
	return fromRow(dbq.GetSubscriptionRow(row)), secret, nil
}

// RotateSecret gives a live subscription of the account a new hmac_secret,
// sealed like the first, and returns it (shown this once). The secret it
// replaces stays valid until previousExpiresAt, or not at all when that is
// nil.
func (s *Store) RotateSecret(ctx context.Context, accountID int64, id string, previousExpiresAt *time.Time) (string, error) {
	secret := secrets.NewHMACSecret()
	keyID, sealed := s.box.Seal(secret, id)
	_, err := s.q.RotateSecret(ctx, dbq.RotateSecretParams{
		ID: id, AccountID: accountID, SecretKeyID: keyID, SecretCiphertext: sealed, ExpiresAt: previousExpiresAt,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	} else if err != nil {
		return "", fmt.Errorf("rotate the secret of %s: %w", id, err)
	}
	return secret, nil
}

// Update applies u (already validated) to a live subscription of the
// account. The row is locked while the update is merged, so concurrent
// updates apply one after another and never mix their fields.
func (s *Store) Update(ctx context.Context, accountID int64, id string, u webhooks.SubscriptionUpdate) (webhooks.Subscription, error) {
	var out webhooks.Subscription
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := q.GetSubscriptionForUpdate(ctx, dbq.GetSubscriptionForUpdateParams{ID: id, AccountID: accountID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		sub := fromRow(dbq.GetSubscriptionRow(row))
		u.Apply(&sub)
		updatedAt, err := q.UpdateSubscription(ctx, dbq.UpdateSubscriptionParams{
			ID:          id,
			AccountID:   accountID,
			Name:        sub.Name,
			Description: sub.Description,
			ClientUrl:   sub.ClientURL,
			EventTypes:  nonNil(sub.EventTypes),
			JobIds:      nonNil(sub.JobIDs),
			Active:      sub.Active,
		})
		if err != nil {
			return err
		}
		sub.UpdatedAt = updatedAt
		out = sub
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return webhooks.Subscription{}, ErrNotFound
	} else if err != nil {
		return webhooks.Subscription{}, fmt.Errorf("update subscription %s: %w", id, err)
	}
	return out, nil
}

// Delete soft-deletes a live subscription of the account. Of concurrent
// deletes of one subscription exactly one succeeds; the others get
// ErrNotFound.
func (s *Store) Delete(ctx context.Context, accountID int64, id string) error {
	_, err := s.q.DeleteSubscription(ctx, dbq.DeleteSubscriptionParams{ID: id, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, err)
	}
	return nil
}

func fromRow(r dbq.GetSubscriptionRow) webhooks.Subscription {
	return webhooks.Subscription{
		ID:                r.ID,
		AccountID:         r.AccountID,
		AccountIdentifier: r.AccountIdentifier,
		Name:              r.Name,
		Description:       r.Description,
		ClientURL:         r.ClientUrl,
		EventTypes:        nonNil(r.EventTypes),
		JobIDs:            nonNil(r.JobIds),
		Active:            r.Active,
		HTTPStatusCode:    int(r.HttpStatusCode),
		DispatchedAt:      r.DispatchedAt,
		CreatedAt:         r.CreatedAt,
		UpdatedAt:         r.UpdatedAt,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
