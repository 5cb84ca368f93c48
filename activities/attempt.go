package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// AttemptOutcome describes one finished attempt, for observers (metrics).
type AttemptOutcome struct {
	DeliveryID     string
	SubscriptionID string
	AccountID      int64
	EventType      string
	Attempt        int32
	StatusCode     int
	ErrorKind      string // "" on success
	Duration       time.Duration
	DeliveryStatus string // after this attempt
	// SinceEvent is the time from the event's acceptance by the API to the
	// end of this attempt; zero when unknown (tests, redeliveries).
	SinceEvent time.Duration
}

// AttemptDelivery makes one attempt of a delivery and records it: it loads
// the subscription (stopping if it was deleted or deactivated), decrypts the
// secret, POSTs the signed body, and records the attempt, the delivery's
// status and the subscription's latest status in one write (the delivery
// record is created by its first recorded attempt). A failed attempt returns an
// error, retryable or not, so Temporal's retry policy spaces the retries; on
// the last attempt the delivery is recorded failed. An attempt whose number
// is already recorded (a rerun after a worker crash) is not made again: its
// recorded outcome is returned.
func (a *Activities) AttemptDelivery(ctx context.Context, in deliveries.AttemptInput) (deliveries.AttemptResult, error) {
	return a.attempt(ctx, in, activity.GetInfo(ctx).Attempt+in.AttemptsMade)
}

// AttemptDeliveries makes the first attempt of each of a page of an event's
// deliveries at once, each exactly as AttemptDelivery would, and returns
// their outcomes in order: one local activity for the page instead of one
// per delivery (fewer markers in the event workflow's history, less work
// for the worker and the server). An attempt that failed and may succeed
// later, or that could not be made or recorded, comes back "retrying", with
// the delay its Retry-After asked for.
func (a *Activities) AttemptDeliveries(ctx context.Context, ins []deliveries.AttemptInput) ([]deliveries.AttemptResult, error) {
	out := make([]deliveries.AttemptResult, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() { out[i] = FirstAttemptOutcome(a.attempt(ctx, in, in.AttemptsMade+1)) })
	}
	wg.Wait()
	return out, nil
}

// FirstAttemptOutcome folds an attempt's error into its result: the
// outcome a recorded failure carries, or "retrying" after one attempt for
// an attempt that could not run or be recorded (it counts as made).
func FirstAttemptOutcome(res deliveries.AttemptResult, err error) deliveries.AttemptResult {
	if err == nil {
		return res
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == deliveries.ErrorTypeAttemptFailed && appErr.HasDetails() {
		var recorded deliveries.AttemptResult
		if appErr.Details(&recorded) == nil {
			return recorded
		}
	}
	return deliveries.AttemptResult{Status: deliveries.StatusRetrying, Error: err.Error(), Attempts: 1}
}

// attempt makes attempt number `attempt` of the delivery in.
func (a *Activities) attempt(ctx context.Context, in deliveries.AttemptInput, attempt int32) (deliveries.AttemptResult, error) {
	if err := a.slots.Acquire(ctx, 1); err != nil {
		return deliveries.AttemptResult{}, fmt.Errorf("wait for a delivery slot: %w", err)
	}
	defer a.slots.Release(1)
	target, err := a.deps.Store.LoadAttempt(ctx, in)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		return deliveries.AttemptResult{Status: deliveries.StatusCancelled, Error: "the webhook was deleted", Attempts: attempt - 1}, nil
	}
	if err != nil {
		return deliveries.AttemptResult{}, err
	}
	if isFinal(target.DeliveryStatus) {
		// An earlier run of this step finished the delivery and recorded it
		// (the worker stopped before Temporal heard of it): never POST twice.
		return deliveries.AttemptResult{Status: target.DeliveryStatus, Attempts: attempt}, nil
	}
	if target.AttemptsRecorded >= attempt {
		result := deliveries.AttemptResult{Status: deliveries.StatusRetrying, StatusCode: target.LastStatusCode,
			Error: target.LastError, Attempts: target.AttemptsRecorded, RetryDelay: target.LastRetryDelay}
		return result, temporal.NewApplicationErrorWithOptions(target.LastError, deliveries.ErrorTypeAttemptFailed,
			temporal.ApplicationErrorOptions{NextRetryDelay: result.RetryDelay, Details: []any{result}})
	}
	if target.Deleted || (!target.Active && !in.IsTest) {
		reason := "the webhook was deactivated"
		if target.Deleted {
			reason = "the webhook was deleted"
		}
		if err := a.deps.Store.Cancel(ctx, in, reason); err != nil {
			return deliveries.AttemptResult{}, err
		}
		return deliveries.AttemptResult{Status: deliveries.StatusCancelled, Error: reason, Attempts: attempt - 1}, nil
	}

	started := a.deps.Now()
	var res postResult
	secret, err := a.deps.Box.Open(target.SecretKeyID, target.SecretCiphertext, in.SubscriptionID)
	if err != nil {
		a.deps.Logger.ErrorContext(ctx, "cannot decrypt hmac_secret", "subscription_id", in.SubscriptionID, "key_id", target.SecretKeyID, "error", err.Error())
		res = postResult{Kind: KindSecret, Message: "the signing secret could not be decrypted (key " + target.SecretKeyID + ")"}
	} else {
		res = post(ctx, a.deps.HTTP, in.AttemptTimeout, target.ClientURL, in.Payload, a.headers(in, secret, attempt))
	}
	duration := a.deps.Now().Sub(started)

	retryable := retryableFailure(res)
	status := deliveries.StatusSucceeded
	var retryDelay time.Duration
	switch {
	case res.Kind == "":
	case !retryable || attempt >= in.MaxAttempts:
		status = deliveries.StatusFailed
	default:
		status = deliveries.StatusRetrying
		if res.RetryAfter > 0 && in.RetryAfterMax > 0 {
			retryDelay = min(res.RetryAfter, in.RetryAfterMax)
		}
	}
	err = a.deps.Store.RecordAttempt(ctx, in, deliveries.AttemptRecord{
		AttemptNumber: attempt, StartedAt: started, Duration: duration, StatusCode: res.StatusCode,
		ErrorKind: res.Kind, ErrorMessage: res.Message, ResponseSnippet: res.Snippet,
		DeliveryStatus: status, RetryDelay: retryDelay,
	})
	if err != nil {
		return deliveries.AttemptResult{}, err
	}
	if a.deps.ObserveAttempt != nil {
		a.deps.ObserveAttempt(ctx, AttemptOutcome{
			DeliveryID: in.DeliveryID, SubscriptionID: in.SubscriptionID, AccountID: in.AccountID,
			EventType: in.EventType, Attempt: attempt, StatusCode: res.StatusCode, ErrorKind: res.Kind,
			Duration: duration, DeliveryStatus: status, SinceEvent: sinceEvent(in.EventAcceptedAt),
		})
	}

	result := deliveries.AttemptResult{Status: status, StatusCode: res.StatusCode, Error: res.Message, Attempts: attempt, RetryDelay: retryDelay}
	if status == deliveries.StatusSucceeded {
		return result, nil
	}
	return result, temporal.NewApplicationErrorWithOptions(res.Message, deliveries.ErrorTypeAttemptFailed, temporal.ApplicationErrorOptions{
		NonRetryable:   !retryable,
		NextRetryDelay: result.RetryDelay,
		Details:        []any{result},
	})
}

func (a *Activities) headers(in deliveries.AttemptInput, secret string, attempt int32) http.Header {
	h := make(http.Header, 6)
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", webhooks.Sign(secret, in.Payload))
	h.Set("User-Agent", a.deps.UserAgent)
	h.Set(HeaderDeliveryID, in.DeliveryID)
	h.Set(HeaderEventID, in.EventID)
	h.Set(HeaderAttempt, strconv.Itoa(int(attempt)))
	return h
}

// retryableFailure says whether another attempt may succeed: not after a
// 4xx other than 408 and 429 (410 Gone included), nor when the destination
// is refused by policy or the URL is unusable.
func retryableFailure(r postResult) bool {
	switch r.Kind {
	case "":
		return false
	case KindNotAllowed, KindInvalidURL:
		return false
	case KindHTTPStatus:
		if r.StatusCode >= 400 && r.StatusCode < 500 {
			return r.StatusCode == http.StatusRequestTimeout || r.StatusCode == http.StatusTooManyRequests
		}
	}
	return true
}

func isFinal(status string) bool {
	return status == deliveries.StatusSucceeded || status == deliveries.StatusFailed || status == deliveries.StatusCancelled
}

// RecordDeliveryFailure marks a delivery failed after its attempts ended
// without a recorded outcome (for example the database was down throughout),
// so Recent Deliveries does not show it retrying forever.
func (a *Activities) RecordDeliveryFailure(ctx context.Context, deliveryID, reason string) error {
	return a.deps.Store.Fail(ctx, deliveryID, reason)
}

// sinceEvent is the time since the event was accepted, or zero if unknown.
func sinceEvent(acceptedAt time.Time) time.Duration {
	if acceptedAt.IsZero() {
		return 0
	}
	return time.Since(acceptedAt)
}
