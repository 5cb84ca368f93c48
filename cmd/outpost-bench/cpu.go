package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// this runs on (the kernel's ABI, whatever its own tick rate).
const clockTick = 100

// boxBusyTicks returns the busy CPU time of the whole machine since boot, in
// clock ticks, from the aggregate "cpu" line of /proc/stat.
func boxBusyTicks() (uint64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read box CPU: %w", err)
	}
	defer f.Close()
	ticks, err := parseProcStat(f)
	if err != nil {
		return 0, fmt.Errorf("read box CPU: %w", err)
	}
	return ticks, nil
}

// parseProcStat sums the busy fields of /proc/stat's "cpu" line: user, nice,
// system, irq, softirq and steal. Idle and iowait are not busy, and guest
// time is already inside user.
func parseProcStat(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 8 {
			return 0, fmt.Errorf("cpu line has %d fields, want at least 8", len(fields))
		}
		var busy uint64
		for i, name := range []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"} {
			if i+1 >= len(fields) {
				break // steal is missing on very old kernels
			}
			v, err := strconv.ParseUint(fields[i+1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu %s: %w", name, err)
			}
			if name != "idle" && name != "iowait" {
				busy += v
			}
		}
		return busy, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no aggregate cpu line")
}

// procStat is what the stack's CPU needs of one /proc/<pid>/stat.
type procStat struct {
	comm  string
	ppid  int
	ticks uint64 // utime + stime
}

// stackTicks returns the user and system CPU time, in clock ticks, of each
// live process of the stack: those with a pid in roots and their
// descendants or, with no roots, those whose command name is in comms.
func stackTicks(roots map[int]bool, comms map[string]bool) (map[int]uint64, error) {
	procs, err := readProcs()
	if err != nil {
		return nil, err
	}
	ticks := map[int]uint64{}
	for pid, p := range procs {
		if inStack(pid, procs, roots, comms) {
			ticks[pid] = p.ticks
		}
	}
	return ticks, nil
}

// ticksSince sums what each process in after used since before: all its
// time for a process that was not there (or whose pid was reused: its time
// went down). A process that exited in between counts nothing, rather than
// taking its whole life's time off the sum; its last moments are lost.
func ticksSince(before, after map[int]uint64) uint64 {
	var sum uint64
	for pid, t := range after {
		if b, ok := before[pid]; ok && b <= t {
			sum += t - b
		} else {
			sum += t
		}
	}
	return sum
}

func readProcs() (map[int]procStat, error) {
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	procs := make(map[int]procStat, len(paths))
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended since the listing
		}
		st, err := parsePIDStat(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		procs[pid] = st
	}
	return procs, nil
}

// inStack reports whether pid is a root or descends from one or, with no
// roots, whether its command name is in comms.
func inStack(pid int, procs map[int]procStat, roots map[int]bool, comms map[string]bool) bool {
	if len(roots) == 0 {
		return comms[procs[pid].comm]
	}
	for hops := 0; pid > 1 && hops < 64; hops++ {
		if roots[pid] {
			return true
		}
		p, ok := procs[pid]
		if !ok {
			return false
		}
		pid = p.ppid
	}
	return false
}

// parsePIDStat reads a /proc/<pid>/stat line's command name, parent and
// utime + stime. The name is in parentheses and may hold spaces or
// parentheses itself, so the fields are counted from the last ')'.
func parsePIDStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("no command name in parentheses")
	}
	// After ")": state(3) ppid(4) ... utime(14) stime(15): indexes 1, 11, 12.
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 13 {
		return procStat{}, fmt.Errorf("%d fields after the name, want at least 13", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return procStat{}, fmt.Errorf("ppid: %w", err)
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stime: %w", err)
	}
	return procStat{comm: string(b[open+1 : end]), ppid: ppid, ticks: utime + stime}, nil
}

// stackSpec names the stack's processes: roots and their descendants, or,
// with no roots, every process named in comms.
type stackSpec struct {
	roots map[int]bool
	comms map[string]bool
}

// cpuReading is the box's and the stack's processes' CPU at one moment.
type cpuReading struct {
	box   uint64
	stack map[int]uint64 // pid -> ticks
}

// since returns the box's and the stack's CPU ticks from r0 to r.
func (r cpuReading) since(r0 cpuReading) (box, stack uint64) {
	return r.box - r0.box, ticksSince(r0.stack, r.stack)
}

func readCPU(st stackSpec) (cpuReading, error) {
	box, err := boxBusyTicks()
	if err != nil {
		return cpuReading{}, err
	}
	stack, err := stackTicks(st.roots, st.comms)
	if err != nil {
		return cpuReading{}, err
	}
	return cpuReading{box: box, stack: stack}, nil
}

// msPerDelivery turns a number of clock ticks into milliseconds per
// delivery.
func msPerDelivery(ticks uint64, deliveries int) float64 {
	if deliveries == 0 {
		return 0
	}
	return float64(ticks) * 1000 / clockTick / float64(deliveries)
}
