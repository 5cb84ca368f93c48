package deliveries

import (
	"net/http"
	"time"
)

// Retries live here. A delivery gets the first try plus five retries (spec
// 6.4, MaxAttempts). After each attempt, Schedule.Next decides what follows
// from the attempt's error kind and status code: succeeded, failed for good,
// or retrying after a wait. The wait is recorded with the attempt
// (RecordAttempts sets next_attempt_at = now() + the wait), and the shard
// or lane that owns the webhook takes the delivery again once it is due
// (its workflow waits on a durable timer until then).

// Error kinds of an attempt without a 2xx.
const (
	KindHTTPStatus = "http_status" // the receiver answered, not 2xx
	KindTimeout    = "timeout"     // no complete answer within the limit
	KindConnection = "connection"  // refused, reset, DNS, TLS
	KindNotAllowed = "not_allowed" // destination refused by the network policy
	KindInvalidURL = "invalid_url" // client_url cannot be requested
	KindSecret     = "secret"      // the hmac_secret could not be decrypted
	// KindInvalidPayload: the body could not be built from the stored event.
	KindInvalidPayload = "invalid_payload"
	// KindAborted: the receiver answered (not 2xx) and asked to stop this
	// delivery (Webhook-Delivery: abort or disable); no retry follows.
	KindAborted = "aborted"
)

// Schedule is when a failed delivery's next attempt is due: the backoff
// grows by Coefficient from Initial up to Max, and a receiver's Retry-After
// (bounded by RetryAfterMax) lengthens a wait but never shortens it.
type Schedule struct {
	Initial       time.Duration
	Coefficient   float64
	Max           time.Duration
	RetryAfterMax time.Duration
}

// RetryIn is the wait after failed attempt number attempt (1 for the first)
// that asked for retryAfter (0: nothing asked).
func (s Schedule) RetryIn(attempt int32, retryAfter time.Duration) time.Duration {
	d := s.Initial
	for i := int32(1); i < attempt && d < s.Max; i++ {
		d = time.Duration(float64(d) * s.Coefficient)
	}
	d = min(d, s.Max)
	return max(d, min(retryAfter, s.RetryAfterMax))
}

// Next is what follows attempt number attempt of maxAttempts, which ended
// with errorKind ("" for a 2xx) and statusCode and asked for retryAfter: the
// delivery's status, and the wait before its next attempt when it is
// retrying.
func (s Schedule) Next(attempt, maxAttempts int32, errorKind string, statusCode int, retryAfter time.Duration) (string, time.Duration) {
	switch {
	case errorKind == "":
		return StatusSucceeded, 0
	case !Retryable(errorKind, statusCode) || attempt >= maxAttempts:
		return StatusFailed, 0
	}
	return StatusRetrying, s.RetryIn(attempt, retryAfter)
}

// Retryable says whether another attempt may succeed after a failure: not
// after a 4xx other than 408 and 429 (410 Gone included), nor when the
// destination is refused by policy, the URL is unusable or the body cannot
// be built.
func Retryable(errorKind string, statusCode int) bool {
	switch errorKind {
	case "", KindNotAllowed, KindInvalidURL, KindInvalidPayload:
		return false
	case KindHTTPStatus:
		if statusCode >= 400 && statusCode < 500 {
			return statusCode == http.StatusRequestTimeout || statusCode == http.StatusTooManyRequests
		}
	}
	return true
}
