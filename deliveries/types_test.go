package deliveries_test

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestSchedule_RetryAfterLengthensButNeverShortens(t *testing.T) {
	s := deliveries.Schedule{Initial: 30 * time.Second, Coefficient: 4, Max: 3 * time.Hour, RetryAfterMax: time.Hour}
	for _, tt := range []struct {
		name       string
		attempt    int32
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first failure, backoff", 1, 0, 30 * time.Second},
		{"second failure, backoff", 2, 0, 2 * time.Minute},
		{"fifth failure, backoff", 5, 0, 2*time.Hour + 8*time.Minute},
		{"backoff capped", 9, 0, 3 * time.Hour},
		{"shorter Retry-After keeps the backoff", 2, 5 * time.Second, 2 * time.Minute},
		{"longer Retry-After lengthens the wait", 1, 5 * time.Minute, 5 * time.Minute},
		{"Retry-After capped", 1, 48 * time.Hour, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.RetryIn(tt.attempt, tt.retryAfter); got != tt.want {
				t.Errorf("RetryIn(%d, %s) = %s, want %s", tt.attempt, tt.retryAfter, got, tt.want)
			}
		})
	}
}
