package main

// These tests start the real program in-process through run(), against a
// fresh PostgreSQL database per test.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

// testEnv is the environment of one in-process run of the program.
func testEnv(t *testing.T, databaseURL string, extra map[string]string) func(string) string {
	t.Helper()
	vars := map[string]string{
		"DATABASE_URL":           databaseURL,
		"HTTP_ADDR":              testenv.FreeAddress(t),
		"ADMIN_ADDR":             testenv.FreeAddress(t),
		"TEMPORAL_ADDRESS":       testenv.FreeAddress(t), // nothing there: serve must not need it
		"SECRET_ENCRYPTION_KEYS": "test1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"LOG_LEVEL":              "warn",
		"SHUTDOWN_GRACE_PERIOD":  "5s",
	}
	// Where the pinned Temporal CLI is comes from the real environment.
	for _, k := range []string{"TEMPORAL_CLI", "WEBHOOKS_TOOLS_DIR"} {
		vars[k] = os.Getenv(k)
	}
	for k, v := range extra {
		vars[k] = v
	}
	return func(k string) string { return vars[k] }
}

// runCommand runs the program to completion and returns its output.
func runCommand(t *testing.T, getenv func(string) string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut testenv.LogBuffer
	err = run(ctx, args, getenv, &out, &errOut)
	return out.String(), errOut.String(), err
}

// mustRunJSON runs an admin command and decodes its one line of JSON.
func mustRunJSON(t *testing.T, getenv func(string) string, v any, args ...string) {
	t.Helper()
	stdout, stderr, err := runCommand(t, getenv, args...)
	if err != nil {
		t.Fatalf("webhooks %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr)
	}
	if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("webhooks %s printed more than one line: %q", strings.Join(args, " "), stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("webhooks %s: stdout %q is not the expected JSON: %v", strings.Join(args, " "), stdout, err)
	}
}

type accountOutput struct {
	AccountID         int64  `json:"account_id"`
	AccountIdentifier string `json:"account_identifier"`
}

type userOutput struct {
	UserID int64  `json:"user_id"`
	Token  string `json:"token"`
}

type serviceTokenOutput struct {
	ServiceTokenID int64  `json:"service_token_id"`
	Token          string `json:"token"`
}

func TestServe_ServesUntilCancelled(t *testing.T) {
	db := testenv.NewDatabase(t)
	getenv := testEnv(t, db.URL, nil)

	var acct accountOutput
	mustRunJSON(t, getenv, &acct, "accounts", "create", "--name", "Serve test", "--plan", "team")
	var user userOutput
	mustRunJSON(t, getenv, &user, "users", "create", "--account", fmt.Sprint(acct.AccountID),
		"--email", "serve@example.com", "--license", "developer", "--permission-set", "account_admin")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, getenv, io.Discard, &stderr) }()

	base := "http://" + getenv("HTTP_ADDR")
	waitHealthy(t, base+"/healthz", done, &stderr)

	req, _ := http.NewRequest(http.MethodGet, base+"/api/v2/accounts/", nil)
	req.Header.Set("Authorization", "Token "+user.Token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET accounts: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"id":%d`, acct.AccountID)) {
		t.Fatalf("GET accounts = %d %s, want 200 listing account %d", resp.StatusCode, body, acct.AccountID)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30s of cancel; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), user.Token) {
		t.Fatal("serve logged a token")
	}
}

// waitHealthy polls url until it answers 200, for at most 30 seconds.
func waitHealthy(t *testing.T, url string, done <-chan error, stderr *testenv.LogBuffer) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	for i := 0; i < 300; i++ {
		select {
		case err := <-done:
			t.Fatalf("program exited before becoming healthy: %v\nstderr:\n%s", err, stderr.String())
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not healthy within 30s; stderr:\n%s", url, stderr.String())
}

func TestAdminCommands_PrintJSON(t *testing.T) {
	db := testenv.NewDatabase(t)
	getenv := testEnv(t, db.URL, nil)

	var acct accountOutput
	mustRunJSON(t, getenv, &acct, "accounts", "create", "--name", "Acme", "--plan", "enterprise")
	if acct.AccountID <= 0 || !strings.HasPrefix(acct.AccountIdentifier, "act_") {
		t.Fatalf("accounts create = %+v", acct)
	}
	var user userOutput
	mustRunJSON(t, getenv, &user, "users", "create", "--account", fmt.Sprint(acct.AccountID),
		"--email", "a@b.c", "--license", "developer", "--permission-set", "account_admin", "--permission-set", "developer")
	if user.UserID <= 0 || !strings.HasPrefix(user.Token, "whu_") {
		t.Fatalf("users create = %+v", user)
	}
	var st serviceTokenOutput
	mustRunJSON(t, getenv, &st, "service-tokens", "create", "--account", fmt.Sprint(acct.AccountID),
		"--name", "ci", "--permission-set", "member")
	if st.ServiceTokenID <= 0 || !strings.HasPrefix(st.Token, "whs_") {
		t.Fatalf("service-tokens create = %+v", st)
	}

	// What the commands stored is what they printed.
	ctx := context.Background()
	var plan string
	if err := db.Pool.QueryRow(ctx, "SELECT plan FROM accounts WHERE id = $1 AND identifier = $2", acct.AccountID, acct.AccountIdentifier).Scan(&plan); err != nil || plan != "enterprise" {
		t.Fatalf("stored account: plan %q, %v", plan, err)
	}
	var sets []string
	if err := db.Pool.QueryRow(ctx, "SELECT permission_sets FROM memberships WHERE user_id = $1 AND account_id = $2", user.UserID, acct.AccountID).Scan(&sets); err != nil ||
		strings.Join(sets, ",") != "account_admin,developer" {
		t.Fatalf("stored permission sets %v, %v; want account_admin,developer", sets, err)
	}

	t.Run("BadInput", func(t *testing.T) {
		tests := []struct {
			args []string
			want string // named in the error
		}{
			{[]string{"accounts", "create"}, "name"},
			{[]string{"accounts", "create", "--name", "x", "--plan", "gold"}, "plan"},
			{[]string{"users", "create", "--account", fmt.Sprint(acct.AccountID), "--email", "x@y.z"}, "permission set"},
			{[]string{"users", "create", "--account", "999999", "--email", "x@y.z", "--permission-set", "member"}, "account"},
			{[]string{"users", "create", "--account", fmt.Sprint(acct.AccountID), "--email", "a@b.c", "--permission-set", "member"}, "a@b.c"},
			{[]string{"service-tokens", "create", "--account", fmt.Sprint(acct.AccountID), "--name", "x", "--permission-set", "root"}, "root"},
			{[]string{"accounts", "delete"}, ""},
			{[]string{"accounts", "create", "--bogus"}, ""},
			{[]string{"accounts", "create", "--name", "x", "extra"}, ""},
		}
		for _, tt := range tests {
			t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
				stdout, stderr, err := runCommand(t, getenv, tt.args...)
				if err == nil {
					t.Fatalf("succeeded; stdout %q", stdout)
				}
				if stdout != "" {
					t.Errorf("printed %q on stdout on failure", stdout)
				}
				if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q does not mention %q (stderr %q)", err, tt.want, stderr)
				}
			})
		}
	})
}

func TestHelp_EveryCommand(t *testing.T) {
	getenv := func(string) string { return "" }
	cases := [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"dev", "--help"}, {"serve", "--help"}, {"worker", "--help"}, {"migrate", "--help"},
		{"accounts", "--help"}, {"accounts", "create", "--help"},
		{"users", "--help"}, {"users", "create", "--help"},
		{"service-tokens", "--help"}, {"service-tokens", "create", "-h"},
		{"listen", "--help"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, err := runCommand(t, getenv, args...)
			if err != nil {
				t.Fatalf("returned %v, want nil", err)
			}
			if !strings.Contains(stdout+stderr, "Usage: webhooks") {
				t.Fatalf("no usage printed; stdout %q stderr %q", stdout, stderr)
			}
		})
	}
	t.Run("CreateFlagsListed", func(t *testing.T) {
		_, stderr, _ := runCommand(t, getenv, "users", "create", "--help")
		for _, flag := range []string{"-account", "-email", "-license", "-permission-set"} {
			if !strings.Contains(stderr, flag) {
				t.Errorf("users create --help lacks %s:\n%s", flag, stderr)
			}
		}
	})
}

func TestRun_UsageErrors(t *testing.T) {
	getenv := func(string) string { return "" }
	if _, stderr, err := runCommand(t, getenv); !errors.Is(err, errUsage) || !strings.Contains(stderr, "Usage") {
		t.Fatalf("no arguments: %v, stderr %q; want errUsage and usage", err, stderr)
	}
	_, stderr, err := runCommand(t, getenv, "frobnicate")
	if err == nil || !strings.Contains(err.Error(), "frobnicate") || !strings.Contains(stderr, "Usage") {
		t.Fatalf("unknown command: %v, stderr %q", err, stderr)
	}
	if exitCode(err) == 0 {
		t.Fatal("unknown command exits 0")
	}
}

func TestRun_BadConfigurationNamesVariable(t *testing.T) {
	getenv := func(k string) string {
		if k == "HTTP_ADDR" {
			return "nonsense"
		}
		return ""
	}
	for _, cmd := range []string{"serve", "worker", "migrate"} {
		_, _, err := runCommand(t, getenv, cmd)
		if err == nil || !strings.Contains(err.Error(), "HTTP_ADDR") {
			t.Errorf("%s with HTTP_ADDR=nonsense: %v, want an error naming HTTP_ADDR", cmd, err)
		}
	}
}

// migrate creates the database named in DATABASE_URL when it is missing.
func TestMigrate_CreatesMissingDatabase(t *testing.T) {
	admin := testenv.NewDatabase(t) // for the server's address and credentials
	name := admin.Name + "_fresh"
	url := strings.Replace(admin.URL, "/"+admin.Name+"?", "/"+name+"?", 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})

	getenv := testEnv(t, url, nil)
	for i := 0; i < 2; i++ { // the second run finds nothing to do
		if _, stderr, err := runCommand(t, getenv, "migrate"); err != nil {
			t.Fatalf("migrate run %d: %v\n%s", i+1, err, stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to migrated database: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('accounts','users','memberships','user_api_keys','service_tokens')").Scan(&n); err != nil || n != 5 {
		t.Fatalf("identity tables after migrate: %d, %v; want 5", n, err)
	}
}
