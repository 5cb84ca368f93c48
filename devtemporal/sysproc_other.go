//go:build unix && !linux

package devtemporal

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// serverSysProcAttr puts the server in its own process group. Without
// Pdeathsig outside Linux, a server whose parent was killed is stopped by
// StopLeftover at the next start.
func serverSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func commandLine(pid int) ([]string, error) {
	out, err := exec.Command("ps", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

func isZombie(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}
