package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// AccountSigningKeys gives an account's Ed25519 signing keys, at most
// signingkeys.FreshFor old (signingkeys.Cache).
type AccountSigningKeys interface {
	Ring(ctx context.Context, accountID int64) (signingkeys.Ring, error)
}

// errSigningKeysUnreadable is what an attempt records when its account's
// signing keys cannot be read; the detail is logged, not shown.
var errSigningKeysUnreadable = errors.New("the account's signing keys could not be read; the attempt will be retried")

// signer sets the signature headers of one attempt of a delivery.
type signer func(h http.Header, deliveryID string, body []byte) error

// signingKeys are a webhook's secrets, opened.
type signingKeys struct {
	current          string
	previous         string     // "" when none or not openable
	previousExpires  *time.Time // nil when none
	errCurrentSecret error
}

// keyCache opens webhooks' secrets and keeps them opened between rounds:
// one per worker, shared by every sender of its attempts.
type keyCache struct {
	box    *secrets.Box
	logger *slog.Logger

	mu   sync.Mutex
	keys map[cachedKeysID]signingKeys
}

// keyCacheSize bounds the opened secrets kept between rounds.
const keyCacheSize = 10000

// keysFor opens a webhook's secrets, or takes them from the cache when the
// same version of the same ciphertexts was opened before.
func (c *keyCache) keysFor(ctx context.Context, target deliveries.WebhookTarget) signingKeys {
	id := cachedKeysID{webhook: target.ID, version: target.SecretVersion, keyID: target.SecretKeyID,
		previousKeyID: target.PreviousSecretKeyID}
	c.mu.Lock()
	k, ok := c.keys[id]
	c.mu.Unlock()
	if ok && equalTime(k.previousExpires, target.PreviousSecretExpiresAt) {
		return k
	}
	k = c.openKeys(ctx, target)
	if k.errCurrentSecret == nil {
		c.mu.Lock()
		if len(c.keys) >= keyCacheSize {
			clear(c.keys)
		}
		c.keys[id] = k
		c.mu.Unlock()
	}
	return k
}

// cachedKeysID identifies a webhook's secrets as opened.
type cachedKeysID struct {
	webhook       string
	version       int32
	keyID         string
	previousKeyID string
}

func equalTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// openKeys decrypts a webhook's secrets.
func (c *keyCache) openKeys(ctx context.Context, target deliveries.WebhookTarget) signingKeys {
	k := signingKeys{previousExpires: target.PreviousSecretExpiresAt}
	var err error
	if k.current, err = c.box.Open(target.SecretKeyID, target.SecretCiphertext, target.ID); err != nil {
		c.logger.ErrorContext(ctx, "cannot decrypt hmac_secret", "subscription_id", target.ID, "key_id", target.SecretKeyID, "error", err.Error())
		k.errCurrentSecret = fmt.Errorf("the signing secret could not be decrypted (key %s)", target.SecretKeyID)
	}
	if target.PreviousSecretExpiresAt != nil {
		if k.previous, err = c.box.Open(target.PreviousSecretKeyID, target.PreviousSecretCiphertext, target.ID); err != nil {
			// The current secret still signs; only the overlap is lost.
			c.logger.WarnContext(ctx, "cannot decrypt the previous hmac_secret", "subscription_id", target.ID, "key_id", target.PreviousSecretKeyID, "error", err.Error())
			k.previous = ""
		}
	}
	return k
}
