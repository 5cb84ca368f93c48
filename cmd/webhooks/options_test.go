package main

import (
	"encoding/base64"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/config"
)

func TestSecretBox_FromEncryptionKeys(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	box, err := secretBox(config.Config{SecretKeys: "primary:" + key + ",older:" + key})
	if err != nil {
		t.Fatal(err)
	}
	if box.PrimaryKeyID() != "primary" {
		t.Fatalf("primary key %q, want the first configured", box.PrimaryKeyID())
	}
	if _, err := secretBox(config.Config{}); err == nil || !strings.Contains(err.Error(), "SECRET_ENCRYPTION_KEYS") {
		t.Fatalf("secretBox without keys = %v, want an error naming SECRET_ENCRYPTION_KEYS", err)
	}
}

func TestDestinationPolicy_FromDestinationSettings(t *testing.T) {
	p, err := destinationPolicy(config.Config{DestinationAllowCIDRs: []string{"10.1.0.0/16"}, DestinationRequireHTTPS: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.RequireHTTPS || !slices.Equal(p.Allow, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}) {
		t.Fatalf("policy %+v, want 10.1.0.0/16 allowed and https required", p)
	}
	if len(p.Internal) != 0 {
		t.Fatalf("policy %+v allows internal addresses without RELAY_BASE_URL", p)
	}
	p, err = destinationPolicy(config.Config{RelayBaseURL: "http://webhooks-api:8080/"})
	if err != nil || !slices.Equal(p.Internal, []string{"http://webhooks-api:8080/relay/v1/"}) {
		t.Fatalf("policy %+v, %v: want the relay under RELAY_BASE_URL allowed", p, err)
	}
	if _, err := destinationPolicy(config.Config{DestinationAllowCIDRs: []string{"10.1.0.0/99"}}); err == nil ||
		!strings.Contains(err.Error(), "DESTINATION_ALLOW_CIDRS") {
		t.Fatalf("destinationPolicy with a bad prefix = %v, want an error naming DESTINATION_ALLOW_CIDRS", err)
	}
}
