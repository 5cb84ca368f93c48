package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

const healthcheckUsage = `Asks the admin endpoints of a process on this host (ADMIN_ADDR) whether it
is ready (/readyz) or, with --live, alive (/healthz); exits 0 when it is and 1
otherwise. For container health checks: the image has no shell or curl.`

func runHealthcheck(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "healthcheck", healthcheckUsage)
	live := fs.Bool("live", false, "check liveness (/healthz) instead of readiness (/readyz)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(cfg.AdminAddr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // listening on every interface: ask over loopback
	}
	path := "/readyz"
	if *live {
		path = "/healthz"
	}
	url := "http://" + net.JoinHostPort(host, port) + path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s", url, resp.Status)
	}
	fmt.Fprintf(env.stdout, "%s: %s\n", url, resp.Status)
	return nil
}
