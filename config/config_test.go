package config_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/config"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoad_Defaults(t *testing.T) {
	cfg, err := config.Load(envOf(nil))
	if err != nil {
		t.Fatalf("Load with no environment: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"DATABASE_URL", cfg.DatabaseURL, "postgres://postgres@127.0.0.1:5432/webhooks?sslmode=disable"},
		{"TEMPORAL_ADDRESS", cfg.TemporalAddress, "127.0.0.1:7233"},
		{"TEMPORAL_NAMESPACE", cfg.TemporalNamespace, "default"},
		{"TEMPORAL_TASK_QUEUE", cfg.TemporalTaskQueue, "webhooks"},
		{"HTTP_ADDR", cfg.HTTPAddr, "127.0.0.1:8080"},
		{"ADMIN_PPROF", cfg.AdminPprof, false},
		{"DELIVERY_TIMEOUT", cfg.DeliveryTimeout, 10 * time.Second},
		{"DELIVERY_RETENTION", cfg.DeliveryRetention, 720 * time.Hour},
		{"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK", cfg.DeliveryMaxInFlightPerWebhook, 1024},
		{"DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION", cfg.DeliveryMaxInFlightPerDestination, 1024},
		{"SHUTDOWN_GRACE_PERIOD", cfg.ShutdownGrace, 20 * time.Second},
		{"LOG_LEVEL", cfg.LogLevel, "info"},
		{"WEBHOOKS_DATA_DIR", cfg.DataDir, ".webhooks-dev"},
		// The spec's behaviour: an outage spends the deliveries' retries.
		{"DELIVERY_ON_OUTAGE", cfg.DeliveryOnOutage, "retry"},
		{"TEMPORAL_GRPC_COMPRESSION", cfg.TemporalGRPCCompression, "gzip"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLoad_ReadsVariables(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	cfg, err := config.Load(envOf(map[string]string{
		"DATABASE_URL":            "postgresql://u:p@db:5433/x",
		"TEMPORAL_ADDRESS":        "temporal:7233",
		"TEMPORAL_NAMESPACE":      "ns",
		"TEMPORAL_TASK_QUEUE":     "q",
		"HTTP_ADDR":               ":9000",
		"DELIVERY_TIMEOUT":        "5s",
		"DESTINATION_ALLOW_CIDRS": "10.0.0.0/8, 192.168.1.0/24",
		"SECRET_ENCRYPTION_KEYS":  "k1:" + key,
		"LOG_LEVEL":               "debug",
		"RELAY_BASE_URL":          "http://webhooks-api:8080/hooks",
		"DELIVERY_RETENTION":      "10m",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.DatabaseURL != "postgresql://u:p@db:5433/x" || cfg.TemporalAddress != "temporal:7233" ||
		cfg.TemporalNamespace != "ns" || cfg.TemporalTaskQueue != "q" || cfg.HTTPAddr != ":9000" ||
		cfg.DeliveryTimeout != 5*time.Second || cfg.DeliveryRetention != 10*time.Minute || cfg.LogLevel != "debug" || cfg.RelayBaseURL != "http://webhooks-api:8080/hooks" {
		t.Fatalf("Load did not read the variables: %+v", cfg)
	}
	cidrs, err := cfg.AllowedCIDRs()
	if err != nil || len(cidrs) != 2 {
		t.Fatalf("AllowedCIDRs = %v, %v; want 2 prefixes", cidrs, err)
	}
	keys, err := config.ParseSecretKeys(cfg.SecretKeys)
	if err != nil || len(keys) != 1 || keys[0].ID != "k1" {
		t.Fatalf("ParseSecretKeys = %v, %v", keys, err)
	}
}

func TestLoad_BadValueNamesVariable(t *testing.T) {
	key32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	key16 := base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		variable string
		value    string
	}{
		{"DATABASE_URL", "mysql://localhost/x"},
		{"DATABASE_URL", "::not a url"},
		{"TEMPORAL_ADDRESS", "no-port"},
		{"HTTP_ADDR", "8080"},
		{"ADMIN_ADDR", "localhost"},
		{"PUBLIC_BASE_URL", "not-absolute"},
		{"RELAY_BASE_URL", "api:8080"},
		{"RELAY_BASE_URL", "ftp://api:8080"},
		{"RELAY_BASE_URL", "http://user:pw@api:8080"},
		{"RELAY_BASE_URL", "http://api:8080/?x=1"},
		{"RELAY_BASE_URL", "http://api:8080/#f"},
		{"SECRET_ENCRYPTION_KEYS", "nokeyid"},
		{"SECRET_ENCRYPTION_KEYS", "k1:" + key16},
		{"SECRET_ENCRYPTION_KEYS", "k1:" + key32 + ",k1:" + key32},
		{"SECRET_ENCRYPTION_KEYS", "k1:!!!"},
		{"INTERNAL_API_TOKEN", "short"},
		{"SIGNING_KEY_ROTATION_OVERLAP", "5m"},
		{"SIGNING_KEY_ROTATION_OVERLAP", "721h"},
		{"SIGNING_KEY_ROTATION_OVERLAP", "a day"},
		{"DESTINATION_ALLOW_CIDRS", "10.0.0.0/33"},
		{"DESTINATION_REQUIRE_HTTPS", "maybe"},
		{"DELIVERY_TIMEOUT", "0s"},
		{"DELIVERY_TIMEOUT", "2m"},
		{"DELIVERY_TIMEOUT", "ten seconds"},
		{"DELIVERY_RETRY_INITIAL_INTERVAL", "-1s"},
		{"DELIVERY_RETRY_BACKOFF_COEFFICIENT", "0.5"},
		{"DELIVERY_RETRY_MAX_INTERVAL", "1s"},
		{"DELIVERY_RETRY_AFTER_MAX", "-1h"},
		{"DELIVERY_RETENTION", "0s"},
		{"DELIVERY_RETENTION", "59s"},
		{"DELIVERY_RETENTION", "30"},
		{"DELIVERY_RETENTION", "thirty days"},
		{"PAYLOAD_TOOL_NAME", "has space"},
		{"WORKER_MAX_CONCURRENT_DELIVERIES", "0"},
		{"WORKER_MAX_CONCURRENT_ROUNDS", "0"},
		{"WORKER_MAX_CONCURRENT_DELIVERIES_PER_ACCOUNT", "2001"},
		{"DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK", "0"},
		{"DELIVERY_INITIAL_IN_FLIGHT_PER_DESTINATION", "0"},
		{"DELIVERY_PAGE_SIZE", "1001"},
		{"DELIVERY_LANE_IDLE_TIMEOUT", "0s"},
		{"INGEST_MAX_GROUP_EVENTS", "0"},
		{"INGEST_FLUSHERS", "0"},
		{"INGEST_LINGER", "-1ms"},
		{"DELIVERY_CLAIM_GATHER", "0s"},
		{"DELIVERY_CLAIM_GATHER", "2s"},
		{"INGEST_LINGER", "2s"},
		{"DELIVERY_OVERDUE_GRACE", "0s"},
		{"DELIVERY_ROUND_LINGER", "11s"},
		{"DELIVERY_LATE_ANSWER_WAIT", "6m"},
		{"DELIVERY_AUTO_DISABLE_AFTER", "-1h"},
		{"DELIVERY_AUTO_DISABLE_MIN_FAILURES", "0"},
		{"DELIVERY_REPLAY_RATE", "0"},
		{"DELIVERY_ON_OUTAGE", "wait"},
		{"TEMPORAL_GRPC_COMPRESSION", "zstd"},
		{"DELIVERY_ON_OUTAGE", "HOLD"},
		{"SHUTDOWN_GRACE_PERIOD", "-5s"},
		{"LOG_LEVEL", "verbose"},
	}
	for _, tt := range tests {
		t.Run(tt.variable+"="+tt.value, func(t *testing.T) {
			_, err := config.Load(envOf(map[string]string{tt.variable: tt.value}))
			if err == nil {
				t.Fatalf("Load accepted %s=%q", tt.variable, tt.value)
			}
			if !strings.Contains(err.Error(), tt.variable) {
				t.Fatalf("error %q does not name %s", err, tt.variable)
			}
		})
	}
}

func TestLoad_ReportsEveryBadVariable(t *testing.T) {
	_, err := config.Load(envOf(map[string]string{"HTTP_ADDR": "x", "LOG_LEVEL": "loud"}))
	if err == nil || !strings.Contains(err.Error(), "HTTP_ADDR") || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Fatalf("error %v, want both HTTP_ADDR and LOG_LEVEL named", err)
	}
}

func TestLoad_ErrorDoesNotEchoSecrets(t *testing.T) {
	secret := "k1:c2VjcmV0c2VjcmV0c2VjcmV0"
	_, err := config.Load(envOf(map[string]string{"SECRET_ENCRYPTION_KEYS": secret}))
	if err == nil {
		t.Fatal("Load accepted a short key")
	}
	if strings.Contains(err.Error(), "c2VjcmV0c2VjcmV0c2VjcmV0") {
		t.Fatalf("error echoes the key material: %v", err)
	}
}

func TestNames_ListsEveryVariable(t *testing.T) {
	names := config.Names()
	for _, want := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "HTTP_ADDR", "WEBHOOKS_DATA_DIR"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("Names() lacks %s: %v", want, names)
		}
	}
}

func TestEncryptionKeys(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	cfg, err := config.Load(envOf(map[string]string{"SECRET_ENCRYPTION_KEYS": "new:" + key + ",old:" + key}))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cfg.EncryptionKeys()
	if err != nil || len(keys) != 2 || keys[0].ID != "new" || len(keys[0].Key) != 32 {
		t.Fatalf("EncryptionKeys = %v, %v; want new then old", keys, err)
	}
	t.Run("ErrRequired", func(t *testing.T) {
		cfg, err := config.Load(envOf(nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.EncryptionKeys(); err == nil || !strings.Contains(err.Error(), "SECRET_ENCRYPTION_KEYS") {
			t.Fatalf("EncryptionKeys without keys = %v, want an error naming SECRET_ENCRYPTION_KEYS", err)
		}
	})
}
