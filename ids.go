package webhooks

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
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

// deliveryIDHexLen is the length of a delivery id after its prefix: 26
// lowercase hex characters, the second the id was made (8) and a key
// (DeliveryIDKeyLen), both for the ids derived from an event and a webhook
// (made in SQL, webhook_delivery_id) and for the random ones below.
const (
	deliveryIDHexLen    = 26
	deliveryIDSecondLen = 8
	// DeliveryIDKeyLen is how many hex characters end a delivery id as its
	// key.
	DeliveryIDKeyLen = deliveryIDHexLen - deliveryIDSecondLen
)

// DeliveryIDSecond is the start of every delivery id made at t: the prefix
// and the second, as eight lowercase hex digits of the Unix time (until
// 2106). Delivery records are partitioned by it (migration 00034), so an
// id made later sorts after it.
func DeliveryIDSecond(t time.Time) string {
	return fmt.Sprintf("%s%08x", DeliveryIDPrefix, uint32(t.Unix()))
}

// NewDeliveryID returns a random delivery id made now (test deliveries and
// redeliveries): the second and 72 random bits as 18 lowercase hex
// characters, the same format as the ids derived from an event.
func NewDeliveryID() string {
	var b [DeliveryIDKeyLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead
	return DeliveryIDSecond(time.Now()) + hex.EncodeToString(b[:])
}

// IsSubscriptionID reports whether id has the shape of a subscription id.
// Anything else cannot exist, so callers answer "not found" without a lookup.
func IsSubscriptionID(id string) bool {
	return isID(SubscriptionIDPrefix, id)
}

// IsDeliveryID reports whether id is a delivery id: the prefix and 26
// lowercase hex characters. Like IsSubscriptionID, anything else is simply
// not found.
func IsDeliveryID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, DeliveryIDPrefix)
	if !ok || len(hexPart) != deliveryIDHexLen {
		return false
	}
	for _, c := range []byte(hexPart) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isID accepts prefix followed by text the database can hold: valid UTF-8
// without control characters. The database refuses NUL and invalid UTF-8
// outright, so such an id must never reach a lookup: it is just unknown.
func isID(prefix, id string) bool {
	return strings.HasPrefix(id, prefix) && len(id) <= maxIDLength &&
		utf8.ValidString(id) && strings.IndexFunc(id, unicode.IsControl) < 0
}
