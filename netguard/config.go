package netguard

import (
	"fmt"

	"github.com/jobhooks/jobhooks/config"
)

// PolicyFromConfig is where deliveries may go, from the DESTINATION_*
// settings; the API (create/update checks) and the worker (connection-time
// checks) must apply the same one.
func PolicyFromConfig(cfg config.Config) (*Policy, error) {
	allow, err := cfg.AllowedCIDRs()
	if err != nil {
		return nil, fmt.Errorf("configuration: DESTINATION_ALLOW_CIDRS: %w", err)
	}
	return &Policy{Allow: allow, RequireHTTPS: cfg.DestinationRequireHTTPS}, nil
}
