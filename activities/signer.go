package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/webhooksettings"
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

// signer returns the signer of the webhook's deliveries, with its secrets
// as the target holds them (read by the claim of the deliveries it signs,
// so a rotation answered before the claim signs them): the spec's
// Authorization (hex HMAC-SHA256 of the body) with the current secret, and
// the Standard Webhooks headers (webhook-id, webhook-timestamp of this
// attempt, webhook-signature) with the current secret and, until it
// expires, the previous one, then the "v1a" Ed25519 signatures of the
// account's keys (accountSignatures), all space separated; or an error the
// attempt records when the current secret or the account's keys cannot be
// opened.
//
// It also applies the webhook's delivery settings (at most
// SettingsFreshFor old, read when the attempt is signed): its custom
// headers go first, so the signature headers set here and the delivery
// headers the caller sets next replace any of the same name (and a name
// the service sets itself is skipped); its client certificate is named
// for post (clientCertificateKey), which sends with the client that
// presents it.
func (a *Activities) signer(ctx context.Context, target deliveries.LaneTarget) signer {
	k := a.keysFor(ctx, target)
	a.settings.cache.want(target.ID)
	return func(h http.Header, deliveryID string, body []byte) error {
		if k.errCurrentSecret != nil {
			return k.errCurrentSecret
		}
		if err := a.applySettings(ctx, target.ID, h); err != nil {
			return err
		}
		now := a.deps.Now()
		asymmetric, err := a.accountSignatures(ctx, target.AccountID, deliveryID, now, body)
		if err != nil {
			return err
		}
		sig := webhooks.SignStandard(k.current, deliveryID, now, body)
		// The previous secret signs only while valid at this moment.
		if k.previous != "" && now.Before(*k.previousExpires) {
			sig += " " + webhooks.SignStandard(k.previous, deliveryID, now, body)
		}
		if asymmetric != "" {
			sig += " " + asymmetric
		}
		h.Set("Authorization", webhooks.Sign(k.current, body))
		h.Set(webhooks.HeaderStandardID, deliveryID)
		h.Set(webhooks.HeaderStandardTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(webhooks.HeaderStandardSignature, sig)
		return nil
	}
}

// accountSignatures are the "v1a" signatures of a message by the
// account's keys that sign at now ("" without SigningKeys). Reading the
// keys is bounded on its own, like the settings.
func (a *Activities) accountSignatures(ctx context.Context, accountID int64, id string, now time.Time, body []byte) (string, error) {
	if a.deps.SigningKeys == nil {
		return "", nil
	}
	ring, err := a.deps.SigningKeys.Ring(context.WithoutCancel(ctx), accountID)
	if err != nil {
		a.deps.Logger.ErrorContext(ctx, "cannot read the account's signing keys", "account_id", accountID, "error", err.Error())
		return "", errSigningKeysUnreadable
	}
	return ring.Sign(id, now, body), nil
}

// applySettings sets a webhook's custom headers on h and names the client
// certificate the attempt presents.
func (a *Activities) applySettings(ctx context.Context, webhookID string, h http.Header) error {
	// An attempt signed as its round ends still goes out (it started):
	// reading the settings is bounded on its own (settingsLoadWithin).
	s, err := a.deliverySettings(context.WithoutCancel(ctx), webhookID)
	if err != nil {
		return err
	}
	for _, ch := range s.Headers {
		if webhooksettings.Reserved(ch.Name) == "" {
			h.Set(ch.Name, ch.Value)
		}
	}
	if s.Certificate != nil {
		if err := a.settings.certs.prepare(s.Certificate); err != nil {
			return err
		}
		h[clientCertificateKey] = []string{s.Certificate.SHA256}
	}
	return nil
}

// keyCacheSize bounds the opened secrets kept between rounds.
const keyCacheSize = 10000

// keysFor opens a webhook's secrets, or takes them from the cache when the
// same version of the same ciphertexts was opened before.
func (a *Activities) keysFor(ctx context.Context, target deliveries.LaneTarget) signingKeys {
	id := cachedKeysID{webhook: target.ID, version: target.SecretVersion, keyID: target.SecretKeyID,
		previousKeyID: target.PreviousSecretKeyID}
	a.keysMu.Lock()
	k, ok := a.keys[id]
	a.keysMu.Unlock()
	if ok && equalTime(k.previousExpires, target.PreviousSecretExpiresAt) {
		return k
	}
	k = a.openKeys(ctx, target)
	if k.errCurrentSecret == nil {
		a.keysMu.Lock()
		if len(a.keys) >= keyCacheSize {
			clear(a.keys)
		}
		a.keys[id] = k
		a.keysMu.Unlock()
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
func (a *Activities) openKeys(ctx context.Context, target deliveries.LaneTarget) signingKeys {
	k := signingKeys{previousExpires: target.PreviousSecretExpiresAt}
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
