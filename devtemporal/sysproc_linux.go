package devtemporal

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// serverSysProcAttr puts the server in its own process group (so a Ctrl-C
// meant for the parent reaches it only through the parent's orderly Stop) and
// has the kernel send it SIGTERM when the parent dies, even by SIGKILL.
// Pdeathsig fires when the thread that started the child exits; Go keeps its
// threads unless a goroutine locked to one ends, which this program never does.
func serverSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

func commandLine(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00"), nil
}

func isZombie(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.State == 'Z'
}
