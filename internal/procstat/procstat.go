// Package procstat reads what the benches and the dev tools need of a
// process from Linux's /proc: its command name, state, parent and CPU time
// (/proc/PID/stat), and its context switches (each thread's
// /proc/PID/task/TID/status). It is the one parser of those files in the
// repository.
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
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

// Switches is how many times pid's threads were switched off a CPU so far,
// voluntarily (to wait) or not: every live thread's count, summed (a
// thread that ended takes its count with it).
func Switches(pid int) (int64, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("procstat: no threads of process %d in /proc", pid)
	}
	var total int64
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended since the glob
		}
		n, err := ParseSwitches(string(raw))
		if err != nil {
			return 0, fmt.Errorf("procstat: %s: %w", f, err)
		}
		total += n
	}
	return total, nil
}

// ParseSwitches reads a /proc status file's voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches and returns their sum.
func ParseSwitches(status string) (int64, error) {
	var total int64
	found := 0
	for line := range strings.Lines(status) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "voluntary_ctxt_switches" && name != "nonvoluntary_ctxt_switches") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		total += n
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("%d of the two context switch counts", found)
	}
	return total, nil
}
