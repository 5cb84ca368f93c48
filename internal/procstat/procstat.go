// Package procstat reads what the benches and the dev tools need of a
// process from Linux's /proc/PID/stat: its command name, state, parent and
// CPU time. It is the one parser of that line in the repository.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Stat is a process's /proc/PID/stat, the fields this repository reads.
type Stat struct {
	Comm     string        // the command name, without its parentheses
	State    byte          // R, S, D, Z, ...
	PPID     int           // the parent's process id
	Own      time.Duration // user and system CPU time of the process
	Children time.Duration // user and system CPU time of its reaped children
}

// ticksPerSecond is USER_HZ, which Linux fixes at 100 for /proc.
const ticksPerSecond = 100

// Read reads pid's /proc/PID/stat (an error where there is no /proc, or
// no such process).
func Read(pid int) (Stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: %w", err)
	}
	st, err := Parse(string(raw))
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// Parse reads a /proc/PID/stat line: "PID (comm) state ppid ...", where
// comm may hold spaces and parentheses (so it ends at the line's last
// ')'), and utime, stime, cutime and cstime are fields 14 to 17, in ticks.
func Parse(line string) (Stat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("no (comm) in %q", line)
	}
	f := strings.Fields(line[end+1:]) // f[0] is field 3 overall
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	n := make([]int64, 0, 5)
	for _, k := range []int{1, 11, 12, 13, 14} { // ppid, utime, stime, cutime, cstime
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("field %d: %w", k+3, err)
		}
		n = append(n, v)
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("state %q", f[0])
	}
	ticks := func(t int64) time.Duration { return time.Duration(t) * time.Second / ticksPerSecond }
	return Stat{
		Comm:     line[open+1 : end],
		State:    f[0][0],
		PPID:     int(n[0]),
		Own:      ticks(n[1] + n[2]),
		Children: ticks(n[3] + n[4]),
	}, nil
}
