package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files dev keeps in WEBHOOKS_DATA_DIR between runs, each mode 0600.
const (
	devSecretKeyFile     = "secret-encryption-key"
	devInternalTokenFile = "internal-api-token"
	devDemoTokenFile     = "demo-token"   // the token the banner shows for the demo account
	devTemporalPIDFile   = "temporal.pid" // the Temporal dev server dev started
)

// devDataDir is WEBHOOKS_DATA_DIR, or the default dev uses.
func devDataDir(getenv func(string) string) string {
	if d := getenv("WEBHOOKS_DATA_DIR"); d != "" {
		return d
	}
	return ".webhooks-dev"
}

// devDefaults is the environment dev runs with.
type devDefaults struct {
	getenv func(string) string
	// internalTokenGenerated is true when INTERNAL_API_TOKEN came from the
	// data dir, not from the operator: only then may dev show it.
	internalTokenGenerated bool
}

// devEnvironment wraps getenv with dev-mode defaults for what serve/worker
// require operators to set: the encryption key and internal token (generated
// once and kept in the data dir) and a loopback allowance for receivers.
func devEnvironment(getenv func(string) string) (devDefaults, error) {
	dataDir := devDataDir(getenv)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return devDefaults{}, fmt.Errorf("WEBHOOKS_DATA_DIR %s: %w", dataDir, err)
	}
	defaults := map[string]string{
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8,::1/128",
		"WEBHOOKS_DATA_DIR":       dataDir,
	}
	if getenv("SECRET_ENCRYPTION_KEYS") == "" {
		key, err := readOrCreate(filepath.Join(dataDir, devSecretKeyFile), func() string {
			return "dev1:" + base64.StdEncoding.EncodeToString(randomBytes(32))
		})
		if err != nil {
			return devDefaults{}, err
		}
		defaults["SECRET_ENCRYPTION_KEYS"] = key
	}
	generated := false
	if getenv("INTERNAL_API_TOKEN") == "" {
		tok, err := readOrCreate(filepath.Join(dataDir, devInternalTokenFile), func() string {
			return "whi_" + base64.RawURLEncoding.EncodeToString(randomBytes(32))
		})
		if err != nil {
			return devDefaults{}, err
		}
		defaults["INTERNAL_API_TOKEN"] = tok
		generated = true
	}
	return devDefaults{
		getenv: func(name string) string {
			if v := getenv(name); v != "" {
				return v
			}
			return defaults[name]
		},
		internalTokenGenerated: generated,
	}, nil
}

// devInternalToken is the internal token a dev started with
// WEBHOOKS_DATA_DIR generated, or "" when there is none.
func devInternalToken(getenv func(string) string) string {
	b, err := os.ReadFile(filepath.Join(devDataDir(getenv), devInternalTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// readOrCreate returns the trimmed content of path, creating it (mode 0600)
// with make() when it does not exist.
func readOrCreate(path string, make func() string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	v := make()
	if err := writeSecretFile(path, v); err != nil {
		return "", err
	}
	return v, nil
}

// writeSecretFile replaces path with v, readable by its owner only.
func writeSecretFile(path, v string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(v+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
