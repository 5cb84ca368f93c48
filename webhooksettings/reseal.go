package webhooksettings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// ResealSecrets re-encrypts every secret header value, private key and
// PagerDuty routing key that is not sealed with the box's primary key (of live and deleted webhooks),
// so an old key can then be removed from SECRET_ENCRYPTION_KEYS; the values
// themselves do not change. Each webhook's row is locked while it is
// resealed, so an update at the same time waits, and running it while the
// service runs is safe. It returns how many secrets were resealed; one no
// configured key opens is an error naming the webhook.
func (s *Store) ResealSecrets(ctx context.Context) (int, error) {
	primary := s.box.PrimaryKeyID()
	list := func(ctx context.Context, after string) ([]string, error) {
		return s.q.DeliverySettingsNotSealedWith(ctx, dbq.DeliverySettingsNotSealedWithParams{KeyID: primary, AfterID: after, BatchSize: secrets.ResealBatch})
	}
	return secrets.ResealAll(ctx, "delivery settings", list, s.resealOne)
}

// resealOne reseals one webhook's secrets under its row's lock.
func (s *Store) resealOne(ctx context.Context, id string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n = 0
		q := s.q.WithTx(tx)
		r, err := q.LockDeliverySettingsSecrets(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted meanwhile
		} else if err != nil {
			return err
		}
		primary := s.box.PrimaryKeyID()
		hs, err := decodeHeaders(r.Headers)
		if err != nil {
			return err
		}
		for i, h := range hs {
			if !h.Secret || h.KeyID == primary {
				continue
			}
			plain, err := s.box.Open(h.KeyID, h.Ciphertext, headerAAD(id, h.Name))
			if err != nil {
				return fmt.Errorf("header %q: %w", h.Name, err)
			}
			hs[i].KeyID, hs[i].Ciphertext = s.box.Seal(plain, headerAAD(id, h.Name))
			n++
		}
		keyID, ciphertext := r.ClientKeyKeyID, r.ClientKeyCiphertext
		if keyID != nil && *keyID != primary {
			plain, err := s.box.Open(*keyID, ciphertext, keyAAD(id))
			if err != nil {
				return fmt.Errorf("client certificate key: %w", err)
			}
			newID, sealed := s.box.Seal(plain, keyAAD(id))
			keyID, ciphertext = &newID, sealed
			n++
		}
		rkKeyID, rkCiphertext := r.PagerdutyRoutingKeyKeyID, r.PagerdutyRoutingKeyCiphertext
		if rkKeyID != nil && *rkKeyID != primary {
			plain, err := s.box.Open(*rkKeyID, rkCiphertext, routingKeyAAD(id))
			if err != nil {
				return fmt.Errorf("PagerDuty routing key: %w", err)
			}
			newID, sealed := s.box.Seal(plain, routingKeyAAD(id))
			rkKeyID, rkCiphertext = &newID, sealed
			n++
		}
		if n == 0 {
			return nil
		}
		raw, err := json.Marshal(merged{headers: hs}.headersColumn())
		if err != nil {
			return err
		}
		return q.ResealDeliverySettings(ctx, dbq.ResealDeliverySettingsParams{
			ID: id, Headers: raw, ClientKeyKeyID: keyID, ClientKeyCiphertext: ciphertext,
			PagerdutyRoutingKeyKeyID: rkKeyID, PagerdutyRoutingKeyCiphertext: rkCiphertext,
		})
	})
	if err != nil {
		return 0, err // rolled back: nothing was resealed
	}
	return n, nil
}
