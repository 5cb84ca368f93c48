package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times on Linux.
const clockTicks = 100

// cpuSeconds returns a process's user+system CPU time so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may contain spaces) start at ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks, nil
}

// peakRSSMiB returns a process's peak resident set size (VmHWM).
func peakRSSMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// benchProc is a child process the bench measures.
type benchProc struct {
	name string
	cmd  *exec.Cmd
	cpu0 float64
}

func startBenchProc(name string, logPath string, env []string, path string, args ...string) (*benchProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &benchProc{name: name, cmd: cmd}, nil
}

func (p *benchProc) pid() int { return p.cmd.Process.Pid }

func (p *benchProc) markCPU() { p.cpu0, _ = cpuSeconds(p.pid()) }

func (p *benchProc) cpuSince() float64 {
	now, _ := cpuSeconds(p.pid())
	return now - p.cpu0
}

// stop sends SIGTERM to the process group and waits, then SIGKILL.
func (p *benchProc) stop() {
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-done
	}
}
