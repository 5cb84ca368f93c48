package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestRetryable(t *testing.T) {
	tests := []struct {
		kind string
		code int
		want bool
	}{
		{deliveries.KindHTTPStatus, 500, true},
		{deliveries.KindHTTPStatus, 503, true},
		{deliveries.KindHTTPStatus, 302, true},
		{deliveries.KindHTTPStatus, 408, true},
		{deliveries.KindHTTPStatus, 429, true},
		{deliveries.KindHTTPStatus, 410, false},
		{deliveries.KindHTTPStatus, 404, false},
		{deliveries.KindHTTPStatus, 401, false},
		// PagerDuty's Events API v2 answers (docs/delivery.md): 202 is a
		// success (kind ""), 400 (an event it refuses) is final, 429 and
		// 5xx are retried. The rule is the same for every format.
		{deliveries.KindHTTPStatus, 400, false},
		{"", 202, false},
		{deliveries.KindTimeout, 0, true},
		{deliveries.KindConnection, 0, true},
		{deliveries.KindSecret, 0, true},
		{deliveries.KindNotAllowed, 0, false},
		{deliveries.KindInvalidURL, 0, false},
		{deliveries.KindInvalidPayload, 0, false},
		{"", 200, false},
	}
	for _, tt := range tests {
		if got := deliveries.Retryable(tt.kind, tt.code); got != tt.want {
			t.Errorf("Retryable(%q, %d) = %v, want %v", tt.kind, tt.code, got, tt.want)
		}
	}
}

func TestSchedule_Next(t *testing.T) {
	s := deliveries.Schedule{Initial: 30 * time.Second, Coefficient: 4, Max: 3 * time.Hour, RetryAfterMax: time.Hour}
	tests := []struct {
		name       string
		attempt    int32
		kind       string
		code       int
		retryAfter time.Duration
		wantStatus string
		wantWait   time.Duration
	}{
		{"success", 1, "", 200, 0, deliveries.StatusSucceeded, 0},
		{"first failure waits the initial interval", 1, deliveries.KindHTTPStatus, 500, 0, deliveries.StatusRetrying, 30 * time.Second},
		{"third failure waits 30s x 4^2", 3, deliveries.KindTimeout, 0, 0, deliveries.StatusRetrying, 8 * time.Minute},
		{"Retry-After lengthens the wait", 1, deliveries.KindHTTPStatus, 429, 10 * time.Minute, deliveries.StatusRetrying, 10 * time.Minute},
		{"the sixth failure is the last", 6, deliveries.KindConnection, 0, 0, deliveries.StatusFailed, 0},
		{"410 Gone is final at once", 1, deliveries.KindHTTPStatus, 410, 0, deliveries.StatusFailed, 0},
		{"PagerDuty's 202 is a success", 1, "", 202, 0, deliveries.StatusSucceeded, 0},
		{"PagerDuty's 400 is final at once", 1, deliveries.KindHTTPStatus, 400, 0, deliveries.StatusFailed, 0},
		{"PagerDuty's 429 is retried", 2, deliveries.KindHTTPStatus, 429, 0, deliveries.StatusRetrying, 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, wait := s.Next(tt.attempt, deliveries.MaxAttempts, tt.kind, tt.code, tt.retryAfter)
			if status != tt.wantStatus || wait != tt.wantWait {
				t.Errorf("Next = %s after %s, want %s after %s", status, wait, tt.wantStatus, tt.wantWait)
			}
		})
	}
}
