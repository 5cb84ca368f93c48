// Package deliveries keeps job-run events, their deliveries and every
// attempt in PostgreSQL, and holds the rules of a delivery's schedule.
package deliveries

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/jobhooks/jobhooks"
)

// Delivery statuses, as stored and as shown by the API.
const (
	StatusPending   = "pending"   // not attempted yet
	StatusRetrying  = "retrying"  // an attempt failed; another is due
	StatusSucceeded = "succeeded" // the receiver answered 2xx
	StatusFailed    = "failed"    // no attempt left, or a failure no retry can fix
	StatusCancelled = "cancelled" // the webhook was deleted first
	StatusSkipped   = "skipped"   // the webhook was inactive: recorded, not sent
)

// Statuses lists every delivery status.
var Statuses = []string{StatusPending, StatusRetrying, StatusSucceeded, StatusFailed, StatusCancelled, StatusSkipped}

// IsFinal reports whether a delivery in status will never be attempted again.
func IsFinal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled || status == StatusSkipped
}

// MaxAttempts is the first try plus the five retries of spec 6.4.
const MaxAttempts = 6

// DeliveryKey is the key of the delivery of an event to a webhook: the
// last 18 hex digits of its id, derived from both, which the ingestion
// statement (IngestEvents, webhook_delivery_id) puts after the second the
// delivery is made.
func DeliveryKey(eventID, subscriptionID string) string {
	sum := sha256.Sum256([]byte(eventID + "/" + subscriptionID))
	return hex.EncodeToString(sum[:])[:webhooks.DeliveryIDKeyLen]
}

// RoutedWebhook is a webhook with deliveries to make and the route that
// takes them: what a wake-up wakes (its shard, by the webhook's lane key,
// or its own lane; nobody while paused or held).
type RoutedWebhook struct {
	SubscriptionID string
	AccountID      int64
	Route          string // RouteShared, RouteOwn, RoutePaused or RouteHeld ("": its shard)
	// LaneKey is the webhook's lane key as its row has it
	// (webhook_subscriptions.lane_key, which follows its destination: see
	// LaneKey), read with the rest; only a shard's wake-up needs it.
	LaneKey int
}
