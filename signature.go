package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign returns the Authorization header value of a delivery (spec 5.2): the
// lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the
// subscription's hmac_secret, with no scheme prefix.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature is what a receiver does: recompute Sign and compare in
// constant time.
func VerifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}
