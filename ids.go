package webhooks

import (
	"crypto/rand"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Identifier prefixes, as on the wire.
const (
	AccountIDPrefix      = "act_"
	SubscriptionIDPrefix = "wsu_"
	EventIDPrefix        = "wev_"
	DeliveryIDPrefix     = "wdl_"
)

// maxIDLength bounds every identifier a client may send back to us.
const maxIDLength = 64

// NewID returns prefix followed by 26 lowercase base32 characters carrying
// 130 random bits, so ids are unguessable and unique across regions.
func NewID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}

// IsSubscriptionID reports whether id has the shape of a subscription id.
// Anything else cannot exist, so callers answer "not found" without a lookup.
func IsSubscriptionID(id string) bool {
	return isID(SubscriptionIDPrefix, id)
}

// IsDeliveryID reports whether id has the shape of a delivery id; like
// IsSubscriptionID, anything else is simply not found.
func IsDeliveryID(id string) bool {
	return isID(DeliveryIDPrefix, id)
}

// isID accepts prefix followed by text the database can hold: valid UTF-8
// without control characters. The database refuses NUL and invalid UTF-8
// outright, so such an id must never reach a lookup: it is just unknown.
func isID(prefix, id string) bool {
	return strings.HasPrefix(id, prefix) && len(id) <= maxIDLength &&
		utf8.ValidString(id) && strings.IndexFunc(id, unicode.IsControl) < 0
}
