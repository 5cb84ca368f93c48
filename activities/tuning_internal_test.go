package activities

import (
	"fmt"
	"testing"

	"github.com/jobhooks/jobhooks/config"
)

// TestTuning_DefaultsAreTheConfigurations: rounds built without a setting
// (tests, tools) use what a worker with the default configuration does.
func TestTuning_DefaultsAreTheConfigurations(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defaults := (Tuning{}).withDefaults()
	tests := []struct {
		setting   string
		got, want any
	}{
		{"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK", defaults.MaxInFlight, cfg.DeliveryMaxInFlightPerWebhook},
		{"DELIVERY_CLAIM_GATHER", defaults.ClaimGather, cfg.DeliveryClaimGather},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
				t.Errorf("Tuning's default = %v, %s's default = %v", tt.got, tt.setting, tt.want)
			}
		})
	}
}
