package workflows

import (
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

func TestContinuedBackoff(t *testing.T) {
	p := deliveries.RetryPolicy{InitialInterval: 30 * time.Second, BackoffCoefficient: 4, MaximumInterval: 3 * time.Hour}
	tests := []struct {
		made int32
		want time.Duration
	}{
		{0, 30 * time.Second},
		{1, 2 * time.Minute}, // handed over after the first attempt: next wait is the second step
		{2, 8 * time.Minute},
		{5, 3 * time.Hour}, // capped
	}
	for _, tt := range tests {
		if got := continuedBackoff(p, tt.made); got != tt.want {
			t.Errorf("continuedBackoff(made=%d) = %s, want %s", tt.made, got, tt.want)
		}
	}
}
