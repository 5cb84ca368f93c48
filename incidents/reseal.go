package incidents

import (
	"context"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
)

// resealBatch is how many notification secrets ResealSecrets reads at a
// time.
const resealBatch = 500

// ResealSecrets re-encrypts every notification endpoint secret not sealed
// with the box's primary key (secrets reencrypt), so an old key can be
// removed. A row changed meanwhile is left as it is (it was sealed with
// the primary key by that change). It returns how many it resealed.
func ResealSecrets(ctx context.Context, store *Store, box *secrets.Box) (int, error) {
	resealed := 0
	var after int64
	for {
		rows, err := store.NotificationSecretsNotSealedWith(ctx, box.PrimaryKeyID(), after, resealBatch)
		if err != nil {
			return resealed, err
		}
		for _, r := range rows {
			aad := webhooks.NotificationSecretAAD(r.AccountID)
			plain, err := box.Open(r.KeyID, r.Ciphertext, aad)
			if err != nil {
				return resealed, fmt.Errorf("reseal the notification secret of account %d: %w", r.AccountID, err)
			}
			keyID, sealed := box.Seal(plain, aad)
			ok, err := store.ResealNotificationSecret(ctx, r, keyID, sealed)
			if err != nil {
				return resealed, err
			}
			if ok {
				resealed++
			}
			after = r.AccountID
		}
		if len(rows) < resealBatch {
			return resealed, nil
		}
	}
}
