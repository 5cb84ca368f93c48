package webhooks

import (
	"crypto/rand"
	"strings"
)

// Identifier prefixes, as on the wire.
const (
	AccountIDPrefix      = "act_"
	SubscriptionIDPrefix = "wsu_"
	EventIDPrefix        = "wev_"
	DeliveryIDPrefix     = "wdl_"
)

// NewID returns prefix followed by 26 lowercase base32 characters carrying
// 130 random bits, so ids are unguessable and unique across regions.
func NewID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}

// IsSubscriptionID reports whether id has the shape of a subscription id.
// Anything else cannot exist, so callers answer "not found" without a lookup.
func IsSubscriptionID(id string) bool {
	return strings.HasPrefix(id, SubscriptionIDPrefix) && len(id) <= 64
}
