package webhooks

import "strings"

// Listener identifiers and the relay's address (webhooks listen).
const (
	ListenerIDPrefix        = "wls_"
	ListenerAttemptIDPrefix = "wla_"
	// RelayTokenPrefix starts the token that routes a listener's deliveries
	// (the last segment of its webhook's client_url).
	RelayTokenPrefix = "whr_"
	// RelayPath is where the API takes the deliveries of listeners: a relay
	// URL is RELAY_BASE_URL, RelayPath and the token.
	RelayPath = "/relay/v1/"
)

// IsListenerID reports whether id has the shape of a listener id; anything
// else is not found without a lookup.
func IsListenerID(id string) bool {
	return isID(ListenerIDPrefix, id)
}

// IsListenerAttemptID reports whether id has the shape of the id of an
// attempt handed to a listener.
func IsListenerAttemptID(id string) bool {
	return isID(ListenerAttemptIDPrefix, id)
}

// RelayPrefix is what every relay URL under base starts with.
func RelayPrefix(base string) string {
	return strings.TrimRight(base, "/") + RelayPath
}

// RelayURL is the client_url of a listener's webhook: the relay under base,
// addressed with token.
func RelayURL(base, token string) string {
	return RelayPrefix(base) + token
}

// ValidateListenerName checks a listener's name; it names the listener's
// webhook too, so it follows the rules of a subscription's name.
func ValidateListenerName(name string) error {
	if e := validateSubscriptionName(name); e != nil {
		return e
	}
	return nil
}
