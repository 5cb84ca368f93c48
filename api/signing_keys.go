package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// signingKeyJSON is one of an account's Ed25519 signing keys: its public
// half in the Standard Webhooks form and as a JWK, and when it signs.
type signingKeyJSON struct {
	ID        string          `json:"id"`
	Algorithm string          `json:"algorithm"`
	PublicKey string          `json:"public_key"`
	JWK       signingkeys.JWK `json:"jwk"`
	ValidFrom string          `json:"valid_from"`
	// ValidUntil is null for the current key.
	ValidUntil *string `json:"valid_until"`
}

// jwksJSON is the published keys as a JSON Web Key Set (RFC 7517).
type jwksJSON struct {
	Keys []signingkeys.JWK `json:"keys"`
}

// jwksMaxAge is how long receivers and proxies may cache the published
// keys; SIGNING_KEY_ROTATION_OVERLAP is at least twice as long.
const jwksMaxAge = "public, max-age=300"

func toSigningKeysJSON(keys []signingkeys.Key) []signingKeyJSON {
	out := make([]signingKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = signingKeyJSON{ID: k.ID, Algorithm: "Ed25519", PublicKey: webhooks.StandardWebhooksPublicKey(k.Public),
			JWK: k.JWK(), ValidFrom: MicrosString(k.ValidFrom)}
		if k.ValidUntil != nil {
			until := MicrosString(*k.ValidUntil)
			out[i].ValidUntil = &until
		}
	}
	return out
}

// needsSigningKeys answers 503 when the server has no signing keys
// service (a test without it).
func (s *Server) needsSigningKeys(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.signingKeys == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Signing keys are not configured on this server."))
			return
		}
		h(c)
	}
}

// getSigningKeys answers GET .../webhooks/signing-keys (read permission):
// the account's keys that sign now, the current one first.
func (s *Server) getSigningKeys(c *gin.Context) {
	a, err := s.webhookAccess(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	keys, err := s.signingKeys.List(c.Request.Context(), a)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toSigningKeysJSON(keys))
}

// rotateSigningKey answers POST .../webhooks/signing-keys/rotate (write
// permission): a new key signs at once, the previous one beside it for
// the overlap. It answers the keys that sign now.
func (s *Server) rotateSigningKey(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	keys, err := s.signingKeys.Rotate(c.Request.Context(), a)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "signing key rotated", "account_id", a.Account().ID, "key_id", keys[0].ID)
	writeData(c, http.StatusOK, toSigningKeysJSON(keys))
}

// jwks answers GET /.well-known/webhooks/{account_id}/jwks.json, without
// credentials: the account's public keys that sign now, as a JWKS, and
// nothing else.
func (s *Server) jwks(c *gin.Context) {
	keys, err := s.signingKeys.Published(c.Request.Context(), c.Param("account_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	set := jwksJSON{Keys: make([]signingkeys.JWK, len(keys))}
	for i, k := range keys {
		set.Keys[i] = k.JWK()
	}
	c.Header("Cache-Control", jwksMaxAge)
	c.JSON(http.StatusOK, set)
}
