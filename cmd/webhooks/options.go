package main

import (
	"fmt"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
)

// secretBox seals and opens hmac_secrets with SECRET_ENCRYPTION_KEYS.
func secretBox(cfg config.Config) (*secrets.Box, error) {
	keys, err := cfg.EncryptionKeys()
	if err != nil {
		return nil, err
	}
	return secrets.NewBox(keys)
}

// destinationPolicy is where deliveries may go, from the DESTINATION_*
// settings; the API (create and update checks) and the worker
// (connection-time checks) must apply the same one.
func destinationPolicy(cfg config.Config) (*netguard.Policy, error) {
	allow, err := cfg.AllowedCIDRs()
	if err != nil {
		return nil, fmt.Errorf("configuration: DESTINATION_ALLOW_CIDRS: %w", err)
	}
	return &netguard.Policy{Allow: allow, RequireHTTPS: cfg.DestinationRequireHTTPS}, nil
}
