// Package devtemporal finds (or builds) the pinned Temporal CLI and runs its
// dev server, for `webhooks dev`, the bench command and tests that need a real Temporal.
package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// CLIModule and CLIVersion pin the Temporal CLI. v1.5.1 is the newest release
// that `go install` can build from the module proxy.
const (
	CLIModule  = "github.com/temporalio/cli/cmd/temporal"
	CLIVersion = "v1.5.1"
)

// ToolsDir is where pinned tools are cached: $WEBHOOKS_TOOLS_DIR or
// ~/.cache/webhooks-tools.
func ToolsDir(getenv func(string) string) string {
	if d := getenv("WEBHOOKS_TOOLS_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "webhooks-tools")
	}
	return filepath.Join(os.TempDir(), "webhooks-tools")
}

// CLIPath returns the pinned CLI's cached path.
func CLIPath(getenv func(string) string) string {
	return filepath.Join(ToolsDir(getenv), "temporal-"+CLIVersion, "temporal")
}

// FindCLI returns a Temporal CLI binary: $TEMPORAL_CLI, else the cached pinned
// build, else (when install is true) it builds the pinned version with
// `go install` into the cache. It does not take an unpinned `temporal` from
// PATH, so every machine runs the same server.
func FindCLI(ctx context.Context, getenv func(string) string, install bool, log io.Writer) (string, error) {
	if p := getenv("TEMPORAL_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TEMPORAL_CLI %s: %w", p, err)
		}
		return p, nil
	}
	path := CLIPath(getenv)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if !install {
		return "", fmt.Errorf("temporal CLI %s not found at %s (run scripts/tools or set TEMPORAL_CLI)", CLIVersion, path)
	}
	fmt.Fprintf(log, "building Temporal CLI %s into %s (once; a few minutes)...\n", CLIVersion, filepath.Dir(path))
	cmd := exec.CommandContext(ctx, "go", "install", CLIModule+"@"+CLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(path), "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w", CLIModule, CLIVersion, err)
	}
	return path, nil
}

// SQLitePragmas tune a file-backed dev server: WAL with synchronous=normal
// survives a crash of the server process (what dev mode and the restart tests
// need) and roughly triples delivery throughput over SQLite's defaults
// (README, Delivery › Performance). Only an OS crash can lose the last
// transactions, which is acceptable for a development server.
var SQLitePragmas = []string{"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"}

func mentionsPragma(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "sqlite-pragma") {
			return true
		}
	}
	return false
}

// Options configure a dev server.
type Options struct {
	CLI       string // path of the temporal binary
	Address   string // host:port of the frontend (gRPC)
	UIPort    int    // Web UI port; 0 runs headless
	DBFile    string // SQLite file for durable history; "" keeps it in memory
	Namespace string
	// ExtraArgs are appended to `temporal server start-dev` (for example
	// --dynamic-config-value or --sqlite-pragma).
	ExtraArgs []string
	Log       io.Writer // the server's own output
	// PIDFile, if set, records the server's pid while it runs, for
	// StopLeftover after a crash of the program that started it.
	PIDFile string
}

// Server is a running dev server.
type Server struct {
	Address string
	UIURL   string
	cmd     *exec.Cmd
	done    chan error
	pidFile string
}

// PID is the server process's id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Start launches `temporal server start-dev` and waits until it serves.
func Start(ctx context.Context, o Options) (*Server, error) {
	host, port, err := net.SplitHostPort(o.Address)
	if err != nil {
		return nil, fmt.Errorf("dev server address %q: %w", o.Address, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	args := []string{"server", "start-dev", "--ip", host, "--port", port, "--log-level", "warn", "--log-format", "json"}
	if o.Namespace != "" && o.Namespace != "default" {
		args = append(args, "--namespace", o.Namespace)
	}
	if o.UIPort > 0 {
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if o.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o700); err != nil {
			return nil, fmt.Errorf("dev server data dir: %w", err)
		}
		args = append(args, "--db-filename", o.DBFile)
	}
	if o.DBFile != "" && !mentionsPragma(o.ExtraArgs) {
		args = append(args, SQLitePragmas...)
	}
	args = append(args, o.ExtraArgs...)
	cmd := exec.Command(o.CLI, args...)
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	cmd.SysProcAttr = serverSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	s := &Server{Address: net.JoinHostPort(host, port), cmd: cmd, done: make(chan error, 1), pidFile: o.PIDFile}
	if o.PIDFile != "" {
		if err := writePIDFile(o.PIDFile, cmd.Process.Pid); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return nil, err
		}
	}
	if o.UIPort > 0 {
		s.UIURL = fmt.Sprintf("http://%s:%d", host, o.UIPort)
	}
	go func() { s.done <- cmd.Wait() }()
	if err := s.waitHealthy(ctx, o.Namespace, 90*time.Second); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitHealthy(ctx context.Context, namespace string, limit time.Duration) error {
	if namespace == "" {
		namespace = "default"
	}
	deadline := time.Now().Add(limit)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("temporal dev server exited during start: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if Reachable(s.Address) {
			c, err := client.Dial(client.Options{HostPort: s.Address, Namespace: namespace, Logger: sdklog.NewStructuredLogger(discardLogger())})
			if err == nil {
				_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
				c.Close()
				if err == nil {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("temporal dev server at %s not healthy after %s", s.Address, limit)
}

// Kill stops the server abruptly (SIGKILL), as a crash would.
func (s *Server) Kill() error {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	return s.wait(10 * time.Second)
}

// Stop asks the server to exit (SIGTERM) and waits for it.
func (s *Server) Stop() error {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	err := s.wait(15 * time.Second)
	if err != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		err = s.wait(5 * time.Second)
	}
	if err == nil && s.pidFile != "" {
		err = removePIDFile(s.pidFile)
	}
	return err
}

func (s *Server) wait(limit time.Duration) error {
	select {
	case err := <-s.done:
		s.done <- err // later Stop or Kill calls see the exit too
		return nil
	case <-time.After(limit):
		return errors.New("temporal dev server did not exit in time")
	}
}

// Reachable reports whether something accepts TCP connections at addr.
func Reachable(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
