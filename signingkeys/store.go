package signingkeys

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// ErrNoAccount: the account does not exist, so it has no keys.
var ErrNoAccount = errors.New("signingkeys: no such account")

// Store is the accounts' signing keys in PostgreSQL
// (account_signing_keys). Private keys are stored only sealed by the Box,
// bound to their account and key.
type Store struct {
	pool *pgxpool.Pool
	q    *dbq.Queries
	box  *secrets.Box
}

// NewStore returns a Store on pool that seals private keys with box.
func NewStore(pool *pgxpool.Pool, box *secrets.Box) *Store {
	return &Store{pool: pool, q: dbq.New(pool), box: box}
}

// privateKeyAAD binds a sealed private key to its account and key, so a
// ciphertext copied to another account or row does not open.
func privateKeyAAD(accountID int64, keyID string) string {
	return "signing-key/" + strconv.FormatInt(accountID, 10) + "/" + keyID
}

// Keys returns the account's keys that sign at now, the current one first, making
// its first key when it has none; ErrNoAccount for an unknown account.
func (s *Store) Keys(ctx context.Context, accountID int64, now time.Time) ([]Key, error) {
	rows, err := s.validAt(ctx, accountID, now)
	if err != nil {
		return nil, err
	}
	out := make([]Key, len(rows))
	for i, r := range rows {
		out[i] = keyOf(r)
	}
	return out, nil
}

// Ring returns the account's keys that sign at now with their private
// halves opened, making its first key when it has none.
func (s *Store) Ring(ctx context.Context, accountID int64, now time.Time) (Ring, error) {
	rows, err := s.validAt(ctx, accountID, now)
	if err != nil {
		return Ring{}, err
	}
	r := Ring{keys: make([]signingKey, 0, len(rows))}
	for _, row := range rows {
		seed, err := s.box.Open(row.PrivateKeyKeyID, row.PrivateKeyCiphertext, privateKeyAAD(accountID, row.ID))
		if err != nil {
			return Ring{}, fmt.Errorf("open signing key %s of account %d: %w", row.ID, accountID, err)
		}
		if len(seed) != ed25519.SeedSize {
			return Ring{}, fmt.Errorf("signing key %s of account %d: sealed seed has %d bytes", row.ID, accountID, len(seed))
		}
		r.keys = append(r.keys, signingKey{Key: keyOf(row), private: ed25519.NewKeyFromSeed([]byte(seed))})
	}
	return r, nil
}

// validAt reads the account's keys that sign at now, making the first key
// when the account has no current one.
func (s *Store) validAt(ctx context.Context, accountID int64, now time.Time) ([]dbq.SigningKeysValidAtRow, error) {
	rows, err := s.q.SigningKeysValidAt(ctx, dbq.SigningKeysValidAtParams{AccountID: accountID, ValidAt: now})
	if err != nil {
		return nil, fmt.Errorf("read signing keys of account %d: %w", accountID, err)
	}
	if hasCurrent(rows) {
		return rows, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := lockAccount(ctx, q, accountID); err != nil {
			return err
		}
		has, err := q.HasCurrentSigningKey(ctx, accountID)
		if err != nil || has {
			return err // made by a concurrent first use
		}
		return s.insertNew(ctx, q, accountID, now)
	})
	if err != nil {
		if errors.Is(err, ErrNoAccount) {
			return nil, err
		}
		return nil, fmt.Errorf("make the first signing key of account %d: %w", accountID, err)
	}
	rows, err = s.q.SigningKeysValidAt(ctx, dbq.SigningKeysValidAtParams{AccountID: accountID, ValidAt: now})
	if err != nil {
		return nil, fmt.Errorf("read signing keys of account %d: %w", accountID, err)
	}
	return rows, nil
}

func hasCurrent(rows []dbq.SigningKeysValidAtRow) bool {
	for _, r := range rows {
		if r.ValidUntil == nil {
			return true
		}
	}
	return false
}

// Rotate makes a new current key for the account, valid from now; the
// current one keeps signing until now+overlap. Any key still in an earlier
// rotation's overlap stops at once, so at most two keys sign. It returns
// the keys that sign at now.
func (s *Store) Rotate(ctx context.Context, accountID int64, now time.Time, overlap time.Duration) ([]Key, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := lockAccount(ctx, q, accountID); err != nil {
			return err
		}
		if err := q.DeleteRetiredSigningKeys(ctx, accountID); err != nil {
			return err
		}
		if err := q.RetireCurrentSigningKey(ctx, dbq.RetireCurrentSigningKeyParams{
			AccountID: accountID, ValidUntil: ptr(now.Add(overlap)),
		}); err != nil {
			return err
		}
		return s.insertNew(ctx, q, accountID, now)
	})
	if errors.Is(err, ErrNoAccount) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("rotate the signing key of account %d: %w", accountID, err)
	}
	return s.Keys(ctx, accountID, now)
}

func lockAccount(ctx context.Context, q *dbq.Queries, accountID int64) error {
	_, err := q.LockAccountForSigningKeys(ctx, accountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoAccount
	}
	return err
}

// insertNew makes a key pair and stores it as the account's current key.
func (s *Store) insertNew(ctx context.Context, q *dbq.Queries, accountID int64, now time.Time) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate a signing key: %w", err)
	}
	id := Thumbprint(pub)
	keyID, sealed := s.box.Seal(string(priv.Seed()), privateKeyAAD(accountID, id))
	return q.InsertSigningKey(ctx, dbq.InsertSigningKeyParams{
		ID: id, AccountID: accountID, PublicKey: pub, PrivateKeyKeyID: keyID,
		PrivateKeyCiphertext: sealed, ValidFrom: now,
	})
}

func keyOf(r dbq.SigningKeysValidAtRow) Key {
	return Key{ID: r.ID, Public: ed25519.PublicKey(r.PublicKey), ValidFrom: r.ValidFrom, ValidUntil: r.ValidUntil}
}

func ptr[T any](v T) *T { return &v }
