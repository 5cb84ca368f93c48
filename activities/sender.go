package activities

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/goroutines"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// sender signs and sends attempts: a webhook's secrets and the account's
// keys sign them, its delivery settings add headers and a client
// certificate, and each holds one of the worker's attempt slots while in
// flight. One per worker, shared by the rounds (attempts and breaker
// probes), test deliveries and notices, with its caches.
type sender struct {
	keys        *keyCache
	settings    *settingsState
	signingKeys AccountSigningKeys
	http        *http.Client
	attempts    *fairshare.Pool
	// goroutines run attempts and their requests: their stacks, grown by
	// the HTTP client and the signer, are kept from one attempt to the next.
	goroutines *goroutines.Pool
	userAgent  string
	// attemptTimeout bounds one attempt; lateAnswerWait is how long after
	// it an answer is still listened for.
	attemptTimeout time.Duration
	lateAnswerWait time.Duration
	logger         *slog.Logger
	now            func() time.Time
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
func (sn *sender) signer(ctx context.Context, target deliveries.WebhookTarget) signer {
	k := sn.keys.keysFor(ctx, target)
	sn.settings.cache.want(target.ID)
	return func(h http.Header, deliveryID string, body []byte) error {
		if k.errCurrentSecret != nil {
			return k.errCurrentSecret
		}
		if err := sn.applySettings(ctx, target.ID, h); err != nil {
			return err
		}
		now := sn.now()
		asymmetric, err := sn.accountSignatures(ctx, target.AccountID, deliveryID, now, body)
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
func (sn *sender) accountSignatures(ctx context.Context, accountID int64, id string, now time.Time, body []byte) (string, error) {
	if sn.signingKeys == nil {
		return "", nil
	}
	ring, err := sn.signingKeys.Ring(context.WithoutCancel(ctx), accountID)
	if err != nil {
		sn.logger.ErrorContext(ctx, "cannot read the account's signing keys", "account_id", accountID, "error", err.Error())
		return "", errSigningKeysUnreadable
	}
	return ring.Sign(id, now, body), nil
}

// applySettings sets a webhook's custom headers on h and names the client
// certificate the attempt presents.
func (sn *sender) applySettings(ctx context.Context, webhookID string, h http.Header) error {
	// An attempt signed as its round ends still goes out (it started):
	// reading the settings is bounded on its own (settingsLoadWithin).
	s, err := sn.settings.deliverySettings(context.WithoutCancel(ctx), webhookID)
	if err != nil {
		return err
	}
	for _, ch := range s.Headers {
		if webhooksettings.Reserved(ch.Name) == "" {
			h.Set(ch.Name, ch.Value)
		}
	}
	if s.Certificate != nil {
		if err := sn.settings.certs.prepare(s.Certificate); err != nil {
			return err
		}
		h[clientCertificateKey] = []string{s.Certificate.SHA256}
	}
	return nil
}

// post sends one attempt of body to url, holding one of the worker's
// attempt slots (shared fairly between accounts) while it is in flight.
// setHeaders signs the request. Without a gate, ctx ending (the worker
// stops) before a slot is free fails the attempt, and ends it while in
// flight.
//
// With a gate, it is asked once the attempt is signed and fenced, right
// before the request. With a fence, the attempt does not start (NotStarted, Message says why)
// when the webhook state it was claimed with is stale and has changed.
func (sn *sender) post(ctx context.Context, accountID int64, url string, body []byte, setHeaders func(http.Header) error, gate *attemptGate, fence *attemptFence) postResult {
	account := strconv.FormatInt(accountID, 10)
	acquireCtx := ctx
	if gate != nil {
		acquireCtx = gate.ctx
	}
	if err := sn.attempts.Acquire(acquireCtx, account); err != nil {
		return postResult{StartedAt: sn.now(), NotStarted: gate != nil, Kind: deliveries.KindTimeout, Message: "no attempt slot before the worker stopped: " + err.Error()}
	}
	defer sn.attempts.Release(account)
	h := make(http.Header, 7)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", sn.userAgent)
	if err := setHeaders(h); err != nil {
		return postResult{StartedAt: sn.now(), Kind: deliveries.KindSecret, Message: err.Error()}
	}
	if fence != nil {
		if why := fence.check(ctx); why != "" {
			return postResult{StartedAt: sn.now(), NotStarted: true, Message: why}
		}
	}
	// The gate is asked last, once signed and fenced (each may wait
	// seconds on the database): an attempt starts only if its lease
	// still covers it from now, and only a started one can be handed
	// over as slow.
	if gate != nil && !gate.start() {
		return postResult{StartedAt: sn.now(), NotStarted: true}
	}
	// The attempt's time is the request's: reading the webhook's delivery
	// settings while signing is not the receiver's.
	started := sn.now()
	hc, certificate := sn.http, h[clientCertificateKey]
	if certificate != nil {
		delete(h, clientCertificateKey)
		var ok bool
		if hc, ok = sn.settings.certs.get(certificate[0]); !ok {
			return postResult{StartedAt: started, Kind: deliveries.KindSecret, Message: "the webhook's client certificate is not loaded; the attempt will be retried"}
		}
	}
	r, late := postWithin(ctx, sn.goroutines, hc, sn.attemptTimeout, sn.lateAnswerWait, url, body, h)
	r.StartedAt, r.Duration, r.Late = started, sn.now().Sub(started), late
	if r.TLSRefused {
		r.Message += tlsRefusalHint(certificate)
	}
	return r
}
