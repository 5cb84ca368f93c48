package subscriptions

import (
	"context"
	"fmt"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// reencryptBatch is how many secrets ResealSecrets reads at a time.
const reencryptBatch = 500

// ResealSecrets re-encrypts every hmac_secret that is not sealed with the
// box's primary key, so an old key can then be removed from
// SECRET_ENCRYPTION_KEYS: the current secrets, and the previous secrets of
// rotations that are still valid (expired ones are dropped). Secrets
// themselves do not change. Each row is replaced only if it still holds
// what was read, so running it while the service runs (or twice at once)
// is safe. It returns how many secrets were resealed; a secret no
// configured key opens is an error naming the row.
func (s *Store) ResealSecrets(ctx context.Context) (int, error) {
	primary := s.box.PrimaryKeyID()
	current, err := s.reseal(ctx, func(after string) ([]sealedSecret, error) {
		rows, err := s.q.SecretsNotSealedWith(ctx, dbq.SecretsNotSealedWithParams{KeyID: primary, AfterID: after, BatchSize: reencryptBatch})
		out := make([]sealedSecret, len(rows))
		for i, r := range rows {
			out[i] = sealedSecret{r.ID, r.SecretKeyID, r.SecretCiphertext}
		}
		return out, err
	}, func(r sealedSecret, keyID string, sealed []byte) (int64, error) {
		return s.q.ResealSecret(ctx, dbq.ResealSecretParams{NewKeyID: keyID, NewCiphertext: sealed, ID: r.id, OldKeyID: r.keyID, OldCiphertext: r.ciphertext})
	})
	if err != nil {
		return current, err
	}
	if _, err := s.q.DropExpiredPreviousSecrets(ctx); err != nil {
		return current, fmt.Errorf("drop expired previous secrets: %w", err)
	}
	previous, err := s.reseal(ctx, func(after string) ([]sealedSecret, error) {
		rows, err := s.q.PreviousSecretsNotSealedWith(ctx, dbq.PreviousSecretsNotSealedWithParams{KeyID: primary, AfterID: after, BatchSize: reencryptBatch})
		out := make([]sealedSecret, len(rows))
		for i, r := range rows {
			out[i] = sealedSecret{r.ID, r.SecretKeyID, r.SecretCiphertext}
		}
		return out, err
	}, func(r sealedSecret, keyID string, sealed []byte) (int64, error) {
		return s.q.ResealPreviousSecret(ctx, dbq.ResealPreviousSecretParams{NewKeyID: keyID, NewCiphertext: sealed, ID: r.id, OldKeyID: r.keyID, OldCiphertext: r.ciphertext})
	})
	return current + previous, err
}

// sealedSecret is one sealed secret of a subscription row.
type sealedSecret struct {
	id, keyID  string
	ciphertext []byte
}

// reseal pages through the secrets next lists, opens each and stores it
// sealed with the primary key through store.
func (s *Store) reseal(ctx context.Context, next func(after string) ([]sealedSecret, error), store func(r sealedSecret, keyID string, sealed []byte) (int64, error)) (int, error) {
	resealed := 0
	after := ""
	for {
		rows, err := next(after)
		if err != nil {
			return resealed, fmt.Errorf("reseal secrets: %w", err)
		}
		for _, r := range rows {
			plain, err := s.box.Open(r.keyID, r.ciphertext, r.id)
			if err != nil {
				return resealed, fmt.Errorf("reseal secret of %s: %w", r.id, err)
			}
			keyID, sealed := s.box.Seal(plain, r.id)
			n, err := store(r, keyID, sealed)
			if err != nil {
				return resealed, fmt.Errorf("reseal secret of %s: %w", r.id, err)
			}
			resealed += int(n)
			after = r.id
		}
		if len(rows) < reencryptBatch {
			return resealed, nil
		}
	}
}
