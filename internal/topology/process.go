package topology

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// Process is one running webhooks process (API or worker).
type Process struct {
	Name  string
	Admin string // ADMIN_ADDR
	Log   string // path of its combined output
	cmd   *exec.Cmd
	done  chan error
}

// StartProcess runs bin with args and env, logging to dir/name.log.
func StartProcess(bin, name, dir string, env []string, args ...string) (*Process, error) {
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logFile.Name(), cmd: cmd, done: make(chan error, 1)}
	for _, kv := range env {
		if len(kv) > len("ADMIN_ADDR=") && kv[:len("ADMIN_ADDR=")] == "ADMIN_ADDR=" {
			p.Admin = kv[len("ADMIN_ADDR="):]
		}
	}
	go func() { p.done <- cmd.Wait(); logFile.Close() }()
	return p, nil
}

// WaitReady polls the process's /readyz until it answers 200.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s exited before it was ready: %v\n%s", p.Name, err, p.LogTail(2000))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at http://%s/readyz after %s (allowed %s): %w", p.Name, p.Admin,
				time.Since(start).Round(time.Millisecond), timeout, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Admin+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// LogTail returns the last n bytes of the process's output.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Kill ends the process with SIGKILL: no drain, no goodbye.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := <-p.done
	p.done <- err
	return nil
}

// Stop sends SIGTERM and waits for a graceful exit, up to grace.
func (p *Process) Stop(grace time.Duration) error {
	return stopProcess(p.cmd.Process, p.done, grace)
}

// stopProcess sends SIGTERM, then SIGKILL after grace; it returns the exit
// error of a graceful exit and is safe to call twice.
func stopProcess(proc *os.Process, done chan error, grace time.Duration) error {
	_ = proc.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		done <- err
		return err
	case <-time.After(grace):
		_ = proc.Signal(syscall.SIGKILL)
		err := <-done
		done <- err
		return fmt.Errorf("did not stop within %s: killed", grace)
	}
}

// CPUTime is the user+system CPU time a running process has used so far
// (Linux /proc; zero elsewhere).
func CPUTime(pid int) time.Duration {
	st, _ := procstat.Read(pid)
	return st.Own
}

// ContextSwitches is how many context switches a running process's threads
// have made so far (Linux /proc; zero elsewhere).
func ContextSwitches(pid int) int64 {
	n, _ := procstat.Switches(pid)
	return n
}

// PostgresContextSwitches is the context switches of one PostgreSQL
// server's live processes (see PostgresCPUTime; a backend that ended
// takes its count with it, which a pool's long-lived connections rarely
// do).
func PostgresContextSwitches(postmaster int) int64 {
	var total int64
	for pid := range postgresProcesses(postmaster) {
		total += ContextSwitches(pid)
	}
	return total
}

// PostgresCPUTime is the CPU time used so far by one PostgreSQL server,
// the one whose postmaster is postmaster (Postmaster; 0: every local
// PostgreSQL process): its live processes, and the backends that ended,
// which count in their parent's reaped-children time. Zero when none is
// visible in /proc. Naming the server leaves out the others on the
// machine (another cluster's load would count as the deployment's).
func PostgresCPUTime(postmaster int) time.Duration {
	var total time.Duration
	for _, st := range postgresProcesses(postmaster) {
		total += st.Own + st.Children
	}
	return total
}

// postgresProcesses are one PostgreSQL server's live processes (every
// local PostgreSQL process for postmaster 0), by process id.
func postgresProcesses(postmaster int) map[int]procstat.Stat {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	procs := map[int]procstat.Stat{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		st, err := procstat.Read(pid)
		if err != nil || st.Comm != "postgres" {
			continue
		}
		if postmaster == 0 || pid == postmaster || st.PPID == postmaster {
			procs[pid] = st
		}
	}
	return procs
}

// Postmaster is the process id of the PostgreSQL server pool's
// connections are served by (the parent of a backend), 0 when it cannot
// be told (a server on another machine).
func Postmaster(ctx context.Context, pool *pgxpool.Pool) int {
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	st, err := procstat.Read(backend)
	if err != nil || st.Comm != "postgres" {
		return 0
	}
	return st.PPID
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }
