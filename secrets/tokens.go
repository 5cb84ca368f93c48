// Package secrets makes and protects the service's secrets: API tokens, which
// are stored only as hashes, and hmac_secrets, which are encrypted at rest.
package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// Token prefixes tell a reader (and secret scanners) what a token is.
const (
	UserKeyPrefix      = "whu_"
	ServiceTokenPrefix = "whs_"
)

// NewToken returns prefix followed by 32 random bytes, base64url encoded.
func NewToken(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is what the database stores for a token. Tokens carry 256 random
// bits, so a fast unsalted hash is enough: a dump cannot be reversed or
// brute-forced into a working credential.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// NewHMACSecret returns a new per-subscription signing secret: 32 random
// bytes, hex-friendly base64url text.
func NewHMACSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
