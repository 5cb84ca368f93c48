// Package topology runs the production topology on one machine without
// Docker: a Temporal server built from source on PostgreSQL, and the
// webhooks binary as separate API and worker processes.
package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/jobhooks/jobhooks/internal/freeport"
)

// TemporalVersion is the server release the topology runs.
const TemporalVersion = "v1.29.1"

// ToolsDir is where built tools are cached: $WEBHOOKS_TOOLS_DIR or
// ~/.cache/webhooks-tools.
func ToolsDir() string {
	if d := os.Getenv("WEBHOOKS_TOOLS_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "webhooks-tools")
}

// TemporalBinaries are the server and its SQL schema tool.
type TemporalBinaries struct {
	Server    string
	SQLTool   string
	SchemaDir string // .../schema/postgresql/v12
}

// EnsureTemporalBinaries builds the Temporal server and SQL tool from the Go
// module proxy once and reuses them from ToolsDir afterwards. The first
// build takes minutes.
func EnsureTemporalBinaries(ctx context.Context) (TemporalBinaries, error) {
	bin := filepath.Join(ToolsDir(), "temporal-server-"+TemporalVersion, "bin")
	b := TemporalBinaries{Server: filepath.Join(bin, "server"), SQLTool: filepath.Join(bin, "sql")}
	if !exists(b.Server) || !exists(b.SQLTool) {
		cmd := exec.CommandContext(ctx, "go", "install",
			"go.temporal.io/server/cmd/server@"+TemporalVersion,
			"go.temporal.io/server/cmd/tools/sql@"+TemporalVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
		cmd.Dir = os.TempDir() // outside any module, so @version installs work
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build Temporal %s: %w\n%s", TemporalVersion, err, out)
		}
	}
	modCache, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return b, fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	b.SchemaDir = filepath.Join(strings.TrimSpace(string(modCache)), "go.temporal.io", "server@"+TemporalVersion, "schema", "postgresql", "v12")
	if !exists(b.SchemaDir) {
		return b, fmt.Errorf("Temporal schema not found at %s", b.SchemaDir)
	}
	return b, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// PostgresTarget is the PostgreSQL server Temporal stores its data in.
type PostgresTarget struct {
	Host, Port, User, Password string
}

// SetupTemporalSchema creates the two databases and applies every schema
// version with temporal-sql-tool, as an operator would.
func SetupTemporalSchema(ctx context.Context, b TemporalBinaries, pg PostgresTarget, database, visibility string) error {
	for _, s := range []struct{ db, dir string }{{database, "temporal"}, {visibility, "visibility"}} {
		base := []string{"--plugin", "postgres12", "--ep", pg.Host, "-p", pg.Port, "-u", pg.User, "--db", s.db}
		if pg.Password != "" {
			base = append(base, "--pw", pg.Password)
		}
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "-d", filepath.Join(b.SchemaDir, s.dir, "versioned")},
		} {
			cmd := exec.CommandContext(ctx, b.SQLTool, append(append([]string{}, base...), args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("temporal-sql-tool %s on %s: %w\n%s", args[0], s.db, err, out)
			}
		}
	}
	return nil
}

// DropDatabases removes databases made for a run.
func DropDatabases(ctx context.Context, adminURL string, names ...string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to drop databases: %w", err)
	}
	defer conn.Close(ctx)
	var errs []error
	for _, n := range names {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ServerTuning are the knobs the topology measurements vary.
type ServerTuning struct {
	HistoryShards       int // persistence.numHistoryShards; fixed once a cluster exists
	PersistenceMaxConns int // per service, default store
	TaskQueuePartitions int // matching read/write partitions
	GOGC                int // Go GC target of the server process; 0 leaves Go's default (100)
	// SQLPlugin is Temporal's PostgreSQL driver: "postgres12" (lib/pq) or
	// "postgres12_pgx" (pgx, which caches prepared statements per
	// connection, so PostgreSQL parses and plans each query once).
	SQLPlugin string
	// AsyncCommit sets synchronous_commit=off on Temporal's connections: a
	// PostgreSQL crash may then lose the last few hundred milliseconds of
	// acknowledged writes. Measured, never the default.
	AsyncCommit bool
	// PprofPort, when not 0, serves the server's net/http/pprof on
	// 127.0.0.1 at that port (global.pprof.port), for CPU profiles.
	PprofPort int
}

// DefaultTuning is what the measurements in README settled on for 2 cores.
var DefaultTuning = ServerTuning{HistoryShards: 8, PersistenceMaxConns: 30, TaskQueuePartitions: 1, GOGC: 400, SQLPlugin: "postgres12_pgx"}

// TemporalServer is a running Temporal server process.
type TemporalServer struct {
	Address string // frontend gRPC host:port
	Dir     string
	cmd     *exec.Cmd
	done    chan error
}

// StartTemporalServer writes a config for a PostgreSQL-backed cluster in dir
// and starts the server, returning once the frontend answers and the
// namespace exists (retention 30 days, the delivery log's).
func StartTemporalServer(ctx context.Context, b TemporalBinaries, pg PostgresTarget, database, visibility, namespace string, tuning ServerTuning, dir string) (*TemporalServer, error) {
	ports, err := freeport.Ports(9)
	if err != nil {
		return nil, err
	}
	values := map[string]any{
		"PG": pg, "DB": database, "VisDB": visibility, "T": tuning,
		"Frontend": ports[0], "FrontendHTTP": ports[1], "FrontendMember": ports[2],
		"History": ports[3], "HistoryMember": ports[4],
		"Matching": ports[5], "MatchingMember": ports[6],
		"Worker": ports[7], "WorkerMember": ports[8],
		"DynamicConfig": filepath.Join(dir, "dynamicconfig.yaml"),
	}
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		return nil, err
	}
	if err := writeTemplate(filepath.Join(dir, "config", "topology.yaml"), serverConfig, values); err != nil {
		return nil, err
	}
	if err := writeTemplate(filepath.Join(dir, "dynamicconfig.yaml"), dynamicConfig, values); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "temporal-server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.Server, "--root", dir, "--config", "config", "--env", "topology", "--allow-no-auth", "start")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if tuning.GOGC > 0 {
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOGC=%d", tuning.GOGC))
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start Temporal server: %w", err)
	}
	s := &TemporalServer{Address: fmt.Sprintf("127.0.0.1:%d", ports[0]), Dir: dir, cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); logFile.Close() }()
	if err := s.waitReady(ctx, namespace); err != nil {
		_ = s.Stop()
		tail, _ := os.ReadFile(logFile.Name())
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		return nil, fmt.Errorf("%w; end of the server log:\n%s", err, tail)
	}
	return s, nil
}

func (s *TemporalServer) waitReady(ctx context.Context, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("Temporal server exited: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		lastErr = registerNamespace(ctx, s.Address, namespace)
		if lastErr == nil {
			return nil
		}
	}
	return fmt.Errorf("Temporal server not ready: %v", lastErr)
}

func registerNamespace(ctx context.Context, address, namespace string) error {
	nc, err := client.NewNamespaceClient(client.Options{HostPort: address, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := nc.Describe(ctx, namespace); err != nil {
		retention := 30 * 24 * time.Hour
		err = nc.Register(ctx, registerRequest(namespace, retention))
		if err != nil && !strings.Contains(err.Error(), "already") {
			return err
		}
	}
	// The frontend serves a new namespace only after its namespace cache
	// refreshes; the operator service is what the worker calls first.
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	return err
}

// SetNamespaceRetention sets how long the server keeps namespace's closed
// workflow runs (an hour at least for a local namespace). The server
// applies it to runs that close after its namespace cache refreshes.
func SetNamespaceRetention(ctx context.Context, address, namespace string, retention time.Duration) error {
	nc, err := client.NewNamespaceClient(client.Options{HostPort: address, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.Update(ctx, updateRetentionRequest(namespace, retention)); err != nil {
		return fmt.Errorf("set namespace %s retention to %s: %w", namespace, retention, err)
	}
	return nil
}

// PID is the server's process id.
func (s *TemporalServer) PID() int { return s.cmd.Process.Pid }

// Stop ends the server with SIGTERM, then SIGKILL after 15 seconds.
func (s *TemporalServer) Stop() error {
	return stopProcess(s.cmd.Process, s.done, 15*time.Second)
}

func writeTemplate(path, text string, values any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return template.Must(template.New(filepath.Base(path)).Parse(text)).Execute(f, values)
}

func quietLogger() sdklog.Logger { return sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)) }
