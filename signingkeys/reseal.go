package signingkeys

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// ResealSecrets re-encrypts every private key not sealed with the box's
// primary key, so an old key can then be removed from
// SECRET_ENCRYPTION_KEYS; the signing keys themselves do not change. Each
// row is locked while it is resealed, so running it while the service runs
// is safe. It returns how many keys were resealed; one no configured key
// opens is an error naming it.
func (s *Store) ResealSecrets(ctx context.Context) (int, error) {
	primary := s.box.PrimaryKeyID()
	list := func(ctx context.Context, after string) ([]string, error) {
		return s.q.SigningKeysNotSealedWith(ctx, dbq.SigningKeysNotSealedWithParams{KeyID: primary, AfterID: after, BatchSize: secrets.ResealBatch})
	}
	return secrets.ResealAll(ctx, "signing keys", list, s.resealOne)
}

// resealOne reseals one private key under its row's lock.
func (s *Store) resealOne(ctx context.Context, id string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		r, err := q.LockSigningKeyForReseal(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // rotated away meanwhile
		} else if err != nil {
			return err
		}
		if r.PrivateKeyKeyID == s.box.PrimaryKeyID() {
			return nil // resealed meanwhile
		}
		aad := privateKeyAAD(r.AccountID, id)
		plain, err := s.box.Open(r.PrivateKeyKeyID, r.PrivateKeyCiphertext, aad)
		if err != nil {
			return err
		}
		keyID, sealed := s.box.Seal(plain, aad)
		if err := q.ResealSigningKey(ctx, dbq.ResealSigningKeyParams{
			ID: id, PrivateKeyKeyID: keyID, PrivateKeyCiphertext: sealed,
		}); err != nil {
			return err
		}
		n = 1
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
