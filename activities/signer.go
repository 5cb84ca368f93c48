package activities

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// SecretsFreshFor is how long secrets loaded for signing are used before
// they are loaded again. A rotation keeps the secret it replaces valid for
// at least twice this long (subscriptions.MinPreviousSecretLifetime), so an
// attempt is never signed with a secret already expired.
const SecretsFreshFor = time.Second

// signer sets the signature headers of one attempt of a delivery.
type signer func(h http.Header, deliveryID string, body []byte) error

// signingKeys are a webhook's secrets as loaded at one moment.
type signingKeys struct {
	loadedAt         time.Time
	current          string
	previous         string     // "" when none or not openable
	previousExpires  *time.Time // nil when none
	errCurrentSecret error
}

// signer returns the signer of the webhook's deliveries: the spec's
// Authorization (hex HMAC-SHA256 of the body) with the current secret, and
// the Standard Webhooks headers (webhook-id, webhook-timestamp of this
// attempt, webhook-signature) with the current secret and, until it
// expires, the previous one (space separated); or an error the attempt
// records when the current secret cannot be opened. Secrets older than
// SecretsFreshFor are loaded again before an attempt is signed.
func (a *Activities) signer(ctx context.Context, target deliveries.LaneTarget) signer {
	var mu sync.Mutex
	keys := a.openKeys(ctx, target)
	return func(h http.Header, deliveryID string, body []byte) error {
		mu.Lock()
		if a.deps.Now().Sub(keys.loadedAt) > SecretsFreshFor {
			if fresh, err := a.deps.Store.LoadLane(ctx, target.ID); err == nil {
				keys = a.openKeys(ctx, fresh)
			} else {
				mu.Unlock()
				return fmt.Errorf("reload the signing secrets: %w", err)
			}
		}
		k := keys
		mu.Unlock()
		if k.errCurrentSecret != nil {
			return k.errCurrentSecret
		}
		now := a.deps.Now()
		sig := webhooks.SignStandard(k.current, deliveryID, now, body)
		// The previous secret signs only while valid at this moment.
		if k.previous != "" && now.Before(*k.previousExpires) {
			sig += " " + webhooks.SignStandard(k.previous, deliveryID, now, body)
		}
		h.Set("Authorization", webhooks.Sign(k.current, body))
		h.Set(HeaderStandardID, deliveryID)
		h.Set(HeaderStandardTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(HeaderStandardSignature, sig)
		return nil
	}
}

// openKeys decrypts a webhook's secrets.
func (a *Activities) openKeys(ctx context.Context, target deliveries.LaneTarget) signingKeys {
	k := signingKeys{loadedAt: a.deps.Now(), previousExpires: target.PreviousSecretExpiresAt}
	var err error
	if k.current, err = a.deps.Box.Open(target.SecretKeyID, target.SecretCiphertext, target.ID); err != nil {
		a.deps.Logger.ErrorContext(ctx, "cannot decrypt hmac_secret", "subscription_id", target.ID, "key_id", target.SecretKeyID, "error", err.Error())
		k.errCurrentSecret = fmt.Errorf("the signing secret could not be decrypted (key %s)", target.SecretKeyID)
	}
	if target.PreviousSecretExpiresAt != nil {
		if k.previous, err = a.deps.Box.Open(target.PreviousSecretKeyID, target.PreviousSecretCiphertext, target.ID); err != nil {
			// The current secret still signs; only the overlap is lost.
			a.deps.Logger.WarnContext(ctx, "cannot decrypt the previous hmac_secret", "subscription_id", target.ID, "key_id", target.PreviousSecretKeyID, "error", err.Error())
			k.previous = ""
		}
	}
	return k
}
