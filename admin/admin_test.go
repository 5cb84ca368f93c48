package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/admin"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/telemetry"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// closedPortURL returns a PostgreSQL URL on a loopback port nobody listens on,
// standing in for a stopped database without touching the shared server.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=1"
}

func newPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func getJSON(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: body %q is not JSON: %v", path, rec.Body.String(), err)
	}
	return rec.Code, body
}

func TestReadyz_FollowsPostgreSQL(t *testing.T) {
	live := newPool(t, testenv.AdminDatabaseURL())
	dead := newPool(t, closedPortURL(t))
	tests := []struct {
		name      string
		pool      *pgxpool.Pool
		wantCode  int
		wantCheck string
	}{
		{"ReachableIsReady", live, http.StatusOK, "ok"},
		{"UnreachableIsNotReady", dead, http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := admin.New(http.NotFoundHandler(), []admin.Check{{Name: "postgres", Check: tt.pool.Ping}}, discardLogger())
			code, body := getJSON(t, srv.Handler(), "/readyz")
			if code != tt.wantCode {
				t.Fatalf("status = %d, want %d (%v)", code, tt.wantCode, body)
			}
			checks, _ := body["checks"].(map[string]any)
			if checks["postgres"] != tt.wantCheck {
				t.Fatalf("checks = %v, want postgres %q", checks, tt.wantCheck)
			}
		})
	}
}

func TestReadyz_FlipsWhenDatabaseGoesAway(t *testing.T) {
	// One check whose target changes under it, as when PostgreSQL stops
	// and comes back: readiness must follow without a restart.
	live := newPool(t, testenv.AdminDatabaseURL())
	dead := newPool(t, closedPortURL(t))
	current := live
	srv := admin.New(http.NotFoundHandler(), []admin.Check{{Name: "postgres", Check: func(ctx context.Context) error {
		return current.Ping(ctx)
	}}}, discardLogger())
	for i, step := range []struct {
		pool *pgxpool.Pool
		want int
	}{{live, 200}, {dead, 503}, {live, 200}} {
		current = step.pool
		if code, body := getJSON(t, srv.Handler(), "/readyz"); code != step.want {
			t.Fatalf("step %d: status = %d, want %d (%v)", i, code, step.want, body)
		}
	}
}

func TestReadyz_NotReadyWhileDraining(t *testing.T) {
	srv := admin.New(http.NotFoundHandler(), nil, discardLogger())
	if code, _ := getJSON(t, srv.Handler(), "/readyz"); code != http.StatusOK {
		t.Fatalf("before drain: status = %d, want 200", code)
	}
	srv.Drain()
	code, body := getJSON(t, srv.Handler(), "/readyz")
	if code != http.StatusServiceUnavailable || body["draining"] != true {
		t.Fatalf("after drain: status = %d body = %v, want 503 draining", code, body)
	}
	if code, _ := getJSON(t, srv.Handler(), "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz while draining = %d, want 200 (the process is alive)", code)
	}
}

func TestListenAndServe_ServesMetricsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "admin-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	tel.Delivery.AttemptFinished(ctx, telemetry.Attempt{EventType: "job.run.started", Outcome: telemetry.AttemptSucceeded, Number: 1, Duration: time.Millisecond})

	srv := admin.New(tel.MetricsHandler(), nil, discardLogger())
	serveCtx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(serveCtx, "127.0.0.1:0", ready) }()
	addr := <-ready

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`webhooks_delivery_attempts_total{event_type="job.run.started",outcome="success"}`, "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe after cancel: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("admin endpoints still answer after shutdown")
	}
}

// TestProfiling_OnlyWhenEnabled: /debug/pprof/ answers with the runtime's
// profiles only on a server that enabled it.
func TestProfiling_OnlyWhenEnabled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		enable bool
		want   int
	}{
		{"off by default", false, http.StatusNotFound},
		{"enabled", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := admin.New(http.NotFoundHandler(), nil, discardLogger())
			if tc.enable {
				srv.EnableProfiling()
			}
			for path, looks := range map[string]string{
				"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile",
				"/debug/pprof/goroutine?debug=1": "goroutine profile",
			} {
				rec := httptest.NewRecorder()
				srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != tc.want {
					t.Errorf("GET %s = %d, want %d", path, rec.Code, tc.want)
				}
				if tc.enable && !strings.Contains(rec.Body.String(), looks) {
					t.Errorf("GET %s does not look like a profile: %.200q", path, rec.Body.String())
				}
			}
		})
	}
}
