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
// SECRET_ENCRYPTION_KEYS. Secrets themselves do not change. Each row is
// replaced only if it still holds what was read, so running it while the
// service runs (or twice at once) is safe. It returns how many secrets were
// resealed; a secret no configured key opens is an error naming the row.
func (s *Store) ResealSecrets(ctx context.Context) (int, error) {
	primary := s.box.PrimaryKeyID()
	resealed := 0
	after := ""
	for {
		rows, err := s.q.SecretsNotSealedWith(ctx, dbq.SecretsNotSealedWithParams{
			KeyID: primary, AfterID: after, BatchSize: reencryptBatch,
		})
		if err != nil {
			return resealed, fmt.Errorf("reseal secrets: %w", err)
		}
		for _, r := range rows {
			plain, err := s.box.Open(r.SecretKeyID, r.SecretCiphertext, r.ID)
			if err != nil {
				return resealed, fmt.Errorf("reseal secret of %s: %w", r.ID, err)
			}
			keyID, sealed := s.box.Seal(plain, r.ID)
			n, err := s.q.ResealSecret(ctx, dbq.ResealSecretParams{
				NewKeyID: keyID, NewCiphertext: sealed,
				ID: r.ID, OldKeyID: r.SecretKeyID, OldCiphertext: r.SecretCiphertext,
			})
			if err != nil {
				return resealed, fmt.Errorf("reseal secret of %s: %w", r.ID, err)
			}
			resealed += int(n)
			after = r.ID
		}
		if len(rows) < reencryptBatch {
			return resealed, nil
		}
	}
}
