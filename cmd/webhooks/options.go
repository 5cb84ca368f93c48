package main

import (
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/worker"
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
// settings and RELAY_BASE_URL; the API (create and update checks) and the
// worker (connection-time checks) apply the same one.
func destinationPolicy(cfg config.Config) (*netguard.Policy, error) {
	return worker.DestinationPolicy(cfg)
}
