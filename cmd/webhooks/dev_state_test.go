package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

func TestDevBanner_ShowsOnlyAGeneratedInternalToken(t *testing.T) {
	const supplied = "whi_supplied_by_the_operator_0123456789abcdef"
	tests := []struct {
		name      string
		env       map[string]string
		wantShown bool
	}{
		{name: "Generated", env: map[string]string{}, wantShown: true},
		{name: "Supplied", env: map[string]string{"INTERNAL_API_TOKEN": supplied}, wantShown: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["WEBHOOKS_DATA_DIR"] = t.TempDir()
			tt.env["SECRET_ENCRYPTION_KEYS"] = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
			defaults, err := devEnvironment(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(defaults.getenv)
			if err != nil {
				t.Fatal(err)
			}
			var out testenv.LogBuffer
			env := &environment{getenv: defaults.getenv, stdout: &out, stderr: &out}
			printDevBanner(env, cfg, "127.0.0.1:8080", "", demoAccount{AccountID: 1, Token: "whs_demo"}, defaults.internalTokenGenerated)
			shown := strings.Contains(out.String(), cfg.InternalAPIToken)
			if shown != tt.wantShown {
				t.Fatalf("internal token %q shown = %v, want %v; banner:\n%s", cfg.InternalAPIToken, shown, tt.wantShown, out.String())
			}
			if !tt.wantShown && cfg.InternalAPIToken != supplied {
				t.Fatalf("dev replaced the supplied token with %q", cfg.InternalAPIToken)
			}
			if _, err := os.Stat(filepath.Join(tt.env["WEBHOOKS_DATA_DIR"], devInternalTokenFile)); tt.wantShown != (err == nil) {
				t.Fatalf("token file exists = %v, want %v", err == nil, tt.wantShown)
			}
		})
	}
}

// emit and simulate, started without INTERNAL_API_TOKEN, use the token a dev
// with the same WEBHOOKS_DATA_DIR generated; without either they say so.
func TestEmit_UsesTheTokenDevGenerated(t *testing.T) {
	dataDir := t.TempDir()
	defaults, err := devEnvironment(func(k string) string { return map[string]string{"WEBHOOKS_DATA_DIR": dataDir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	devToken := defaults.getenv("INTERNAL_API_TOKEN")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+devToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"eventId": "evt_1"}})
	}))
	t.Cleanup(srv.Close)

	for _, cmd := range [][]string{{"emit"}, {"simulate", "--runs", "1", "--run-duration", "1ms", "--error-rate", "0"}} {
		t.Run(cmd[0], func(t *testing.T) {
			getenv := func(k string) string { return map[string]string{"WEBHOOKS_DATA_DIR": dataDir}[k] }
			stdout, stderr, err := runCommand(t, getenv, append(cmd, "--api", srv.URL)...)
			if err != nil || !strings.Contains(stdout, "evt_1") {
				t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", cmd[0], err, stdout, stderr)
			}
		})
	}
	t.Run("ErrTokenRequired", func(t *testing.T) {
		getenv := func(k string) string { return map[string]string{"WEBHOOKS_DATA_DIR": t.TempDir()}[k] }
		_, _, err := runCommand(t, getenv, "emit", "--api", srv.URL)
		if err == nil || !strings.Contains(err.Error(), "INTERNAL_API_TOKEN is required") {
			t.Fatalf("emit without any token: err = %v", err)
		}
	})
}

// Each dev start shows the demo token kept in the data dir while it still
// authenticates, instead of minting another account_admin service token.
func TestEnsureDemoAccount_ReusesTheStoredToken(t *testing.T) {
	db := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := identity.NewStore(db.Pool)
	tokenFile := filepath.Join(t.TempDir(), devDemoTokenFile)
	serviceTokens := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM service_tokens").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	mustEnsure := func() demoAccount {
		t.Helper()
		d, err := ensureDemoAccount(ctx, store, tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Authenticate(ctx, d.Token); err != nil {
			t.Fatalf("shown token does not authenticate: %v", err)
		}
		return d
	}

	first := mustEnsure()
	if !strings.HasPrefix(first.Token, "whu_") || first.UserID == 0 {
		t.Fatalf("first run: %+v, want the admin user's key", first)
	}
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", fi, err)
	}
	if again := mustEnsure(); again.Token != first.Token || again.AccountID != first.AccountID || serviceTokens() != 0 {
		t.Fatalf("second run: %+v and %d service tokens; want the first token again and none minted", again, serviceTokens())
	}

	// A key that no longer authenticates (rotated, another database) is replaced once.
	if err := os.WriteFile(tokenFile, []byte("whu_revoked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replaced := mustEnsure()
	if !strings.HasPrefix(replaced.Token, "whs_") || replaced.AccountID != first.AccountID || serviceTokens() != 1 {
		t.Fatalf("after revocation: %+v, %d service tokens; want one new service token", replaced, serviceTokens())
	}
	if again := mustEnsure(); again.Token != replaced.Token || serviceTokens() != 1 {
		t.Fatalf("after replacement: %+v, %d service tokens; want the replacement reused", again, serviceTokens())
	}
}
