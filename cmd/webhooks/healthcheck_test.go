package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/admin"
)

func TestHealthcheck_FollowsReadiness(t *testing.T) {
	var ready atomic.Bool
	srv := admin.New(http.NotFoundHandler(), []admin.Check{{Name: "postgres", Check: func(context.Context) error {
		if !ready.Load() {
			return context.DeadlineExceeded
		}
		return nil
	}}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bound := make(chan string, 1)
	done := make(chan error, 1)
	serveCtx, stop := context.WithCancel(ctx)
	go func() { done <- srv.ListenAndServe(serveCtx, "127.0.0.1:0", bound) }()
	addr := <-bound
	t.Cleanup(func() { stop(); <-done })
	// 0.0.0.0 as in containers: the check must ask over loopback.
	port := addr[strings.LastIndex(addr, ":")+1:]
	getenv := func(k string) string {
		if k == "ADMIN_ADDR" {
			return "0.0.0.0:" + port
		}
		return ""
	}
	tests := []struct {
		name    string
		ready   bool
		args    []string
		wantErr bool
	}{
		{"ReadyExitsZero", true, nil, false},
		{"NotReadyFails", false, nil, true},
		{"LiveEvenWhenNotReady", false, []string{"--live"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready.Store(tt.ready)
			var out, errOut strings.Builder
			err := run(ctx, append([]string{"healthcheck"}, tt.args...), getenv, &out, &errOut)
			if (err != nil) != tt.wantErr {
				t.Fatalf("healthcheck %v: err = %v, want error %v (stdout %q)", tt.args, err, tt.wantErr, out.String())
			}
		})
	}
	stop()
	if err := run(ctx, []string{"healthcheck", "--live"}, getenv, io.Discard, io.Discard); err == nil {
		t.Fatal("healthcheck succeeded against a stopped admin server")
	}
}
