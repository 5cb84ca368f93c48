package devtemporal

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A dev server must not outlive the program that started it. Two measures:
// on Linux the kernel sends the server SIGTERM when its parent dies
// (Pdeathsig, see sysproc_linux.go); everywhere, Start records the server's
// pid in Options.PIDFile and StopLeftover, at the next start, stops a server
// a killed parent left behind. StopLeftover only stops the process the file
// names if its command line is still that of our dev server on our database
// file, so a reused pid or a server someone else runs is never touched.

// writePIDFile records pid in path.
func writePIDFile(path string, pid int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		return fmt.Errorf("dev server pid file: %w", err)
	}
	return nil
}

// StopLeftover stops the dev server recorded in pidFile if it still runs
// `temporal server start-dev` on dbFile (SIGTERM to its process group, SIGKILL
// after grace), then removes pidFile. It reports whether it stopped one.
func StopLeftover(pidFile, dbFile string, grace time.Duration) (bool, error) {
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("dev server pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !isOurServer(pid, dbFile) {
		return false, removePIDFile(pidFile)
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; alive(pid) && i < 50; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			return false, fmt.Errorf("leftover Temporal dev server (pid %d) did not exit", pid)
		}
	}
	return true, removePIDFile(pidFile)
}

func removePIDFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dev server pid file: %w", err)
	}
	return nil
}

// isOurServer reports whether pid runs `... server start-dev ... --db-filename dbFile`.
func isOurServer(pid int, dbFile string) bool {
	args, err := commandLine(pid)
	if err != nil {
		return false
	}
	joined := " " + strings.Join(args, " ") + " "
	return dbFile != "" && strings.Contains(joined, " start-dev ") && strings.Contains(joined, " --db-filename "+dbFile+" ")
}

// alive reports whether pid exists and is not a zombie waiting for its parent.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	return !isZombie(pid)
}
