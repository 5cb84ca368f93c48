package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// rotateSecretRequest is the optional body of a secret rotation.
type rotateSecretRequest struct {
	ExpirePreviousInSeconds *int64 `json:"expire_previous_in_seconds"`
}

// rotatedSecretJSON is a new secret, shown this once. It is an object of
// its own, not the spec's subscription object.
type rotatedSecretJSON struct {
	ID                      string  `json:"id"`
	HMACSecret              string  `json:"hmac_secret"`
	StandardWebhooksSecret  string  `json:"standard_webhooks_secret"`
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
}

// DefaultPreviousSecretLifetime is how long a rotated secret stays valid
// when the request does not say.
const DefaultPreviousSecretLifetime = 24 * time.Hour

// rotateSecret gives a webhook a new hmac_secret. Until the previous one
// expires, deliveries carry a Standard Webhooks signature with each;
// Authorization carries the new one from now on.
func (s *Server) rotateSecret(c *gin.Context) {
	a, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req rotateSecretRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			s.writeError(c, err)
			return
		}
	}
	expire := DefaultPreviousSecretLifetime
	if req.ExpirePreviousInSeconds != nil {
		// The service checks the range; clamping first keeps a huge number
		// from wrapping into it.
		secs := min(max(*req.ExpirePreviousInSeconds, -1), int64(subscriptions.MaxPreviousSecretLifetime/time.Second)+1)
		expire = time.Duration(secs) * time.Second
	}
	secret, expires, err := s.subscriptions.RotateSecret(c.Request.Context(), a, id, expire)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook secret rotated",
		"account_id", a.Account().ID, "subscription_id", id, "previous_valid_for", expire.String())
	out := rotatedSecretJSON{ID: id, HMACSecret: secret, StandardWebhooksSecret: webhooks.StandardWebhooksSecret(secret)}
	if expires != nil {
		v := MicrosString(*expires)
		out.PreviousSecretExpiresAt = &v
	}
	c.Header("Cache-Control", "no-store")
	writeData(c, http.StatusOK, out)
}
