// Package admin serves the operator endpoints on ADMIN_ADDR, for the API and
// the worker alike: /metrics (Prometheus), /healthz (alive) and /readyz
// (PostgreSQL and Temporal reachable, and not shutting down), and, when
// enabled (ADMIN_PPROF), Go's runtime profiles under /debug/pprof/.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// CheckTimeout bounds each readiness check.
const CheckTimeout = 2 * time.Second

// Check reports whether one dependency is usable.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Server answers the operator endpoints.
type Server struct {
	metrics  http.Handler
	checks   []Check
	logger   *slog.Logger
	draining atomic.Bool
	// profiling serves /debug/pprof/ (EnableProfiling).
	profiling bool
}

// New returns the admin endpoints; metrics serves /metrics.
func New(metrics http.Handler, checks []Check, logger *slog.Logger) *Server {
	return &Server{metrics: metrics, checks: checks, logger: logger}
}

// EnableProfiling serves Go's runtime profiles (CPU, heap, goroutines,
// mutex and block contention, execution traces) under /debug/pprof/, as
// net/http/pprof does, for an operator or a benchmark to see where a
// process spends its time. Call it before Handler. The admin address is
// for operators only: profiles name the code and its data's sizes.
func (s *Server) EnableProfiling() { s.profiling = true }

// Drain makes /readyz answer 503 from now on, so load balancers and
// orchestrators stop sending work while the process finishes what it has.
func (s *Server) Drain() { s.draining.Store(true) }

// Handler routes the admin endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// RunChecks runs every check concurrently, each within CheckTimeout, and
// reports whether all passed and each one's state ("ok" or "unavailable").
// Failures are logged with their error; the report never shows it.
func RunChecks(ctx context.Context, checks []Check, logger *slog.Logger) (ready bool, states map[string]string) {
	ready, states = true, map[string]string{}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			checkCtx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			err := c.Check(checkCtx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ready = false
				states[c.Name] = "unavailable"
				logger.WarnContext(ctx, "readiness check failed", "check", c.Name, "error", err.Error())
				return
			}
			states[c.Name] = "ok"
		}()
	}
	wg.Wait()
	return ready, states
}

// readinessReport is the body of /readyz.
type readinessReport struct {
	Ready    bool              `json:"ready"`
	Draining bool              `json:"draining,omitempty"`
	Checks   map[string]string `json:"checks"`
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	report := readinessReport{}
	report.Ready, report.Checks = RunChecks(r.Context(), s.checks, s.logger)
	if s.draining.Load() {
		report.Ready, report.Draining = false, true
	}
	code := http.StatusOK
	if !report.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, report)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ListenAndServe serves the admin endpoints on addr until ctx ends, then
// closes the listener. ready, when not nil, receives the bound address.
// Callers cancel ctx only after the main work has drained, so /metrics stays
// scrapeable and /readyz keeps answering 503 during the drain.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on ADMIN_ADDR %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
	}
	s.logger.Info("admin endpoints listening", "addr", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve admin endpoints: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down admin endpoints: %w", err)
	}
	return nil
}
