package webhooks

// The header names of a delivery besides Content-Type and Authorization.
// They are the wire contract with receivers: the worker sets them, the
// relay and `webhooks listen` read them back, so they live here rather than
// in any one of those packages.
const (
	HeaderDeliveryID = "Webhook-Delivery-Id" // wdl_..., the same on every retry
	HeaderEventID    = "Webhook-Event-Id"    // wev_...
	HeaderAttempt    = "Webhook-Attempt"     // 1..6
	// The Standard Webhooks headers (https://www.standardwebhooks.com),
	// signed with the same secret (StandardWebhooksSecret).
	HeaderStandardID        = "Webhook-Id"        // the delivery id, the same on every attempt
	HeaderStandardTimestamp = "Webhook-Timestamp" // Unix seconds of this attempt
	HeaderStandardSignature = "Webhook-Signature" // v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"> and v1a,<base64 Ed25519 signature of it>
)

// A receiver's directives, in its answer's Webhook-Delivery header (the
// Webhook- prefix of the delivery's own headers; values without case):
// abort ends this delivery after the attempt, disable deactivates the
// webhook as automatic deactivation does. The worker obeys them and the
// relay passes them back from a listener, so both read these names.
const (
	HeaderDirective  = "Webhook-Delivery"
	DirectiveAbort   = "abort"
	DirectiveDisable = "disable"
)
