// Package signingkeys is each account's Ed25519 signing keys: made on first
// use, rotated with an overlap, published, and used to sign deliveries.
package signingkeys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

// Key is one public signing key of an account and when it signs.
type Key struct {
	// ID is the key's kid: its JWK thumbprint (RFC 7638).
	ID        string
	Public    ed25519.PublicKey
	ValidFrom time.Time
	// ValidUntil is when a rotated-out key stops signing and leaves the
	// published keys; nil for the current key.
	ValidUntil *time.Time
}

// validAt reports whether the key signs at t.
func (k Key) validAt(t time.Time) bool {
	return k.ValidUntil == nil || t.Before(*k.ValidUntil)
}

// Ring is an account's keys that sign, with their private halves opened.
// It is the only thing that holds them outside the store, and it signs
// without handing them out.
type Ring struct {
	keys []signingKey
}

type signingKey struct {
	Key
	private ed25519.PrivateKey
}

// Sign returns the Standard Webhooks "v1a" signatures of id, now and body
// by every key of the ring that signs at now (the current key first),
// space separated; "" when none does.
func (r Ring) Sign(id string, now time.Time, body []byte) string {
	var b strings.Builder
	for _, k := range r.keys {
		if !k.validAt(now) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(webhooks.SignStandardAsymmetric(k.private, id, now, body))
	}
	return b.String()
}

// Keys are the ring's public keys.
func (r Ring) Keys() []Key {
	out := make([]Key, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.Key
	}
	return out
}

// Thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 public key
// (SHA-256 of its required members in lexical order, base64url): a kid
// any JOSE library can recompute.
func Thumbprint(pub ed25519.PublicKey) string {
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// JWK is a public key as a JSON Web Key (RFC 8037).
type JWK struct {
	KeyType string `json:"kty"`
	Curve   string `json:"crv"`
	X       string `json:"x"`
	KeyID   string `json:"kid"`
	Use     string `json:"use"`
	Alg     string `json:"alg"`
}

// JWK returns the key as a JSON Web Key.
func (k Key) JWK() JWK {
	return JWK{KeyType: "OKP", Curve: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.Public),
		KeyID: k.ID, Use: "sig", Alg: "EdDSA"}
}
