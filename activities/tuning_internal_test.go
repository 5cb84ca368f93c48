package activities

import (
	"testing"

	"github.com/jobhooks/jobhooks/config"
)

// TestTuning_DefaultMaxInFlightIsTheConfigurations: rounds built without
// a MaxInFlight (tests, tools) bound a slow lane's rounds and a webhook's
// in-flight limit as a worker with the default configuration does.
func TestTuning_DefaultMaxInFlightIsTheConfigurations(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := (Tuning{}).withDefaults().MaxInFlight, cfg.DeliveryMaxInFlightPerWebhook; got != want {
		t.Errorf("Tuning's default MaxInFlight = %d, DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK's default = %d", got, want)
	}
}

// TestTuning_DefaultClaimGatherIsTheConfigurations: rounds built without
// a ClaimGather gather as long as a worker with the default configuration.
func TestTuning_DefaultClaimGatherIsTheConfigurations(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := (Tuning{}).withDefaults().ClaimGather, cfg.DeliveryClaimGather; got != want {
		t.Errorf("Tuning's default ClaimGather = %s, DELIVERY_CLAIM_GATHER's default = %s", got, want)
	}
}
