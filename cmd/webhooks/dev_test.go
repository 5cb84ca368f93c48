package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/devtemporal"
	"github.com/jobhooks/jobhooks/internal/freeport"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// freeTemporalAddr returns a loopback frontend address whose Web UI port
// (frontend + 1000, as dev uses) is free too.
func freeTemporalAddr(t *testing.T) string {
	t.Helper()
	for i := 0; i < 50; i++ {
		ports, err := freeport.Ports(1)
		if err != nil {
			continue
		}
		port := ports[0]
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+1000))
		if err != nil {
			continue
		}
		ln.Close()
		return fmt.Sprintf("127.0.0.1:%d", port)
	}
	t.Fatal("no free port pair for Temporal")
	return ""
}

var bannerToken = regexp.MustCompile(`Token:\s+(wh[us]_[A-Za-z0-9_-]+)`)
var bannerAccount = regexp.MustCompile(`Account id:\s+(\d+)`)
var bannerInternalToken = regexp.MustCompile(`Internal token:\s+(whi_[A-Za-z0-9_-]+)`)

// devRun is one `webhooks dev` running in-process.
type devRun struct {
	cancel context.CancelFunc
	done   chan error
	stdout *testenv.LogBuffer
	stderr *testenv.LogBuffer
}

func startDev(t *testing.T, getenv func(string) string) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &devRun{cancel: cancel, done: make(chan error, 1), stdout: &testenv.LogBuffer{}, stderr: &testenv.LogBuffer{}}
	go func() { d.done <- run(ctx, []string{"dev"}, getenv, d.stdout, d.stderr) }()
	t.Cleanup(func() { d.stop(t) })
	// Wait (bounded) for the banner, printed once the API listens, and for
	// the worker to poll, so Ctrl-C is tested on a service fully up.
	deadline := time.Now().Add(3 * time.Minute)
	for !bannerToken.MatchString(d.stdout.String()) || !strings.Contains(d.stderr.String(), `"msg":"worker polling"`) {
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("dev exited before printing its banner: %v\nstderr:\n%s", err, d.stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev not up (banner, worker polling) within 3m; stdout:\n%s\nstderr:\n%s", d.stdout.String(), d.stderr.String())
		}
	}
	return d
}

// stop cancels dev (Ctrl-C) and requires a clean, timely exit.
func (d *devRun) stop(t *testing.T) {
	t.Helper()
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("dev returned %v after Ctrl-C; stderr:\n%s", err, d.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("dev did not stop within 60s of Ctrl-C; stderr:\n%s", d.stderr.String())
	}
}

func (d *devRun) banner(t *testing.T) (accountID int64, token string) {
	t.Helper()
	out := d.stdout.String()
	tok := bannerToken.FindStringSubmatch(out)
	acct := bannerAccount.FindStringSubmatch(out)
	if tok == nil || acct == nil {
		t.Fatalf("banner lacks account id or token:\n%s", out)
	}
	id, _ := strconv.ParseInt(acct[1], 10, 64)
	return id, tok[1]
}

func getStatus(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dev, from nothing but PostgreSQL: creates the database, starts the pinned
// Temporal dev server with its Web UI, prints a working token, serves, and
// stops everything on Ctrl-C. The second run reuses the demo account and its
// token.
func TestDev_RunsEverythingFromScratch(t *testing.T) {
	admin := testenv.NewDatabase(t) // the server and credentials to use
	name := admin.Name + "_dev"
	url := strings.Replace(admin.URL, "/"+admin.Name+"?", "/"+name+"?", 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	temporalAddr := freeTemporalAddr(t)
	getenv := testEnv(t, url, map[string]string{
		"TEMPORAL_ADDRESS":       temporalAddr,
		"WEBHOOKS_DATA_DIR":      t.TempDir(),
		"SECRET_ENCRYPTION_KEYS": "",     // dev generates one
		"LOG_LEVEL":              "info", // to see "worker polling"
	})
	base := "http://" + getenv("HTTP_ADDR")

	first := startDev(t, getenv)
	accountID, token := first.banner(t)
	requireMigratedLine(t, first.stderr.String(), fmt.Sprintf("database migrated to version %d", latestMigration(t)))
	if !strings.HasPrefix(token, "whu_") || !strings.Contains(first.stdout.String(), "User id:") {
		t.Fatalf("first run should print the admin user's key:\n%s", first.stdout.String())
	}
	code, body := getStatus(t, base+"/api/v2/accounts/", token)
	if code != http.StatusOK || !strings.Contains(body, `"plan":"team"`) || !strings.Contains(body, fmt.Sprintf(`"id":%d`, accountID)) {
		t.Fatalf("GET accounts with the printed token = %d %s", code, body)
	}
	if code, body := getStatus(t, base+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz = %d %s, want 200 with Temporal up", code, body)
	}
	_, port, _ := net.SplitHostPort(temporalAddr)
	uiPort, _ := strconv.Atoi(port)
	if code, _ := getStatus(t, fmt.Sprintf("http://127.0.0.1:%d/", uiPort+1000), ""); code != http.StatusOK {
		t.Fatalf("Temporal Web UI answered %d", code)
	}
	first.stop(t)
	if devtemporal.Reachable(temporalAddr) {
		t.Fatal("the Temporal dev server still listens after Ctrl-C")
	}
	if devtemporal.Reachable(getenv("HTTP_ADDR")) {
		t.Fatal("the API still listens after Ctrl-C")
	}

	generated := bannerInternalToken.FindStringSubmatch(first.stdout.String())
	if generated == nil || !strings.Contains(first.stdout.String(), devInternalTokenFile) {
		t.Fatalf("first run should show the internal token it generated:\n%s", first.stdout.String())
	}

	// The second run is given its internal token: it must not echo it, and
	// it shows the first run's token again rather than minting another.
	const supplied = "whi_given_to_dev_by_the_operator_0123456789"
	second := startDev(t, func(k string) string {
		if k == "INTERNAL_API_TOKEN" {
			return supplied
		}
		return getenv(k)
	})
	accountID2, token2 := second.banner(t)
	requireMigratedLine(t, second.stderr.String(), fmt.Sprintf("database up to date (version %d)", latestMigration(t)))
	if accountID2 != accountID || token2 != token {
		t.Fatalf("second run: account %d token %q, want account %d and the first run's token again", accountID2, token2, accountID)
	}
	if out := second.stdout.String() + second.stderr.String(); strings.Contains(out, supplied) {
		t.Fatalf("dev echoed the INTERNAL_API_TOKEN it was given:\n%s", out)
	}
	if code, body := getStatus(t, base+"/api/v2/accounts/", token2); code != http.StatusOK {
		t.Fatalf("GET accounts with the second run's token = %d %s", code, body)
	}
	second.stop(t)
}

// latestMigration is the version of the newest migration in db/migrations.
func latestMigration(t *testing.T) int64 {
	t.Helper()
	names, err := filepath.Glob("../../db/migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	var latest int64
	for _, n := range names {
		v, err := strconv.ParseInt(strings.SplitN(filepath.Base(n), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", n, err)
		}
		latest = max(latest, v)
	}
	return latest
}

// requireMigratedLine: what dev said of the migration, before its banner,
// is the one line want, and no log line per migration.
func requireMigratedLine(t *testing.T, stderr, want string) {
	t.Helper()
	said := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "database ") {
			said++
		}
	}
	if said != 1 || !strings.Contains("\n"+stderr, "\n"+want+"\n") {
		t.Errorf("dev should say %q, once, about the database:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "migration applied") {
		t.Errorf("dev logged each migration:\n%s", stderr)
	}
}

// TestDevMigrate_OneLineForPeople: dev migrates a new database saying so in
// one line of text, not a JSON line per migration, and says in one line
// that a migrated database is up to date.
func TestDevMigrate_OneLineForPeople(t *testing.T) {
	admin := testenv.NewDatabase(t) // the server and credentials to use
	name := admin.Name + "_new"
	url := strings.Replace(admin.URL, "/"+admin.Name+"?", "/"+name+"?", 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	if err := db.EnsureDatabase(t.Context(), url); err != nil {
		t.Fatal(err)
	}
	pool, err := db.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	latest := latestMigration(t)
	for _, want := range []string{
		fmt.Sprintf("database migrated to version %d\n", latest),
		fmt.Sprintf("database up to date (version %d)\n", latest),
	} {
		var out strings.Builder
		if err := migrateForPeople(t.Context(), pool, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("dev said %q about the database, want %q", out.String(), want)
		}
	}
}
