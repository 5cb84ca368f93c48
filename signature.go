package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
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

// StandardWebhooksSecret is a webhook's secret in the form the Standard
// Webhooks libraries take (https://www.standardwebhooks.com): "whsec_" and
// the base64 of the hmac_secret's bytes. It is the same key: a receiver
// derives it from the hmac_secret it was given.
func StandardWebhooksSecret(hmacSecret string) string {
	return "whsec_" + base64.StdEncoding.EncodeToString([]byte(hmacSecret))
}

// SignStandard returns the webhook-signature header value of the Standard
// Webhooks specification for message id, timestamp and the exact body:
// "v1," and the base64 HMAC-SHA256 of "{id}.{unix seconds}.{body}", keyed
// with the hmac_secret's bytes.
func SignStandard(hmacSecret, id string, timestamp time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(hmacSecret))
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyStandardSignature is what a Standard Webhooks receiver does: header
// (a webhook-signature value, space-separated "v1,<base64>" signatures)
// holds SignStandard's signature of id, timestamp and body by hmacSecret.
// The caller checks that timestamp is recent.
func VerifyStandardSignature(hmacSecret, id string, timestamp time.Time, body []byte, header string) bool {
	want := []byte(SignStandard(hmacSecret, id, timestamp, body))
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), want) {
			return true
		}
	}
	return false
}
