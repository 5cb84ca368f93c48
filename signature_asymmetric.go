package webhooks

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// StandardWebhooksPublicKey is an Ed25519 public key in the form the
// Standard Webhooks libraries take: "whpk_" and the base64 of its 32 bytes.
func StandardWebhooksPublicKey(pub ed25519.PublicKey) string {
	return "whpk_" + base64.StdEncoding.EncodeToString(pub)
}

// standardSignedContent is what every Standard Webhooks signature covers:
// "{id}.{unix seconds}.{body}". The HMAC streams it (SignStandard); Ed25519
// needs it whole.
func standardSignedContent(id string, timestamp time.Time, body []byte) []byte {
	ts := strconv.FormatInt(timestamp.Unix(), 10)
	msg := make([]byte, 0, len(id)+len(ts)+2+len(body))
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = append(msg, ts...)
	msg = append(msg, '.')
	return append(msg, body...)
}

// SignStandardAsymmetric returns one webhook-signature of the Standard
// Webhooks asymmetric scheme: "v1a," and the base64 Ed25519 signature by
// key of "{id}.{unix seconds}.{body}". It goes beside the "v1," HMAC,
// space separated, in the same header.
func SignStandardAsymmetric(key ed25519.PrivateKey, id string, timestamp time.Time, body []byte) string {
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(key, standardSignedContent(id, timestamp, body)))
}

// VerifyStandardAsymmetric is what a receiver holding the published key
// does: some "v1a,<base64>" signature of header (a webhook-signature
// value; other schemes are ignored) is pub's signature of id, timestamp
// and body. The caller checks that timestamp is recent.
func VerifyStandardAsymmetric(pub ed25519.PublicKey, id string, timestamp time.Time, body []byte, header string) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	msg := standardSignedContent(id, timestamp, body)
	for _, field := range strings.Fields(header) {
		b64, ok := strings.CutPrefix(field, "v1a,")
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && ed25519.Verify(pub, msg, sig) {
			return true
		}
	}
	return false
}
