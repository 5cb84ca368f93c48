package main

import (
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     uint64
		wantErr  bool
	}{
		{
			name: "SumsBusyFieldsOnly",
			// user nice system idle iowait irq softirq steal guest guest_nice
			in:   "cpu  100 2 30 5000 40 5 6 7 9 0\ncpu0 50 1 15 2500 20 2 3 3 4 0\nintr 1 2 3\n",
			want: 100 + 2 + 30 + 5 + 6 + 7,
		},
		{name: "NoStealField", in: "cpu 1 2 3 4 5 6 7\n", want: 1 + 2 + 3 + 6 + 7},
		{name: "AggregateLineAfterOthers", in: "intr 5\ncpu 1 1 1 1 1 1 1 1\n", want: 6},
		{name: "PerCPULinesAreNotTheAggregate", in: "cpu0 1 1 1 1 1 1 1 1\n", wantErr: true},
		{name: "TooFewFields", in: "cpu 1 2 3\n", wantErr: true},
		{name: "NotANumber", in: "cpu 1 x 3 4 5 6 7 8\n", wantErr: true},
		{name: "Empty", in: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseProcStat error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseProcStat = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParsePIDStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     procStat
		wantErr  bool
	}{
		{
			name: "Plain",
			in:   "1234 (redis-server) S 1 1234 1234 0 -1 4194560 1 0 0 0 70 30 0 0 20 0 5 0 100 1000 200 0",
			want: procStat{comm: "redis-server", ppid: 1, ticks: 100},
		},
		{
			name: "NameWithSpacesAndParentheses",
			in:   "77 (a (b) c) R 9 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1",
			want: procStat{comm: "a (b) c", ppid: 9, ticks: 11},
		},
		{name: "NoName", in: "77 beam.smp R 1 2 3", wantErr: true},
		{name: "Truncated", in: "77 (x) R 1 77 77 0", wantErr: true},
		{name: "BadTime", in: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 z 1 0 0 20 0 1 0 1 1 1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePIDStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parsePIDStat error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parsePIDStat = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestInStack(t *testing.T) {
	// 1 init; 10 postgres postmaster, 11 its backend; 20 beam.smp, 21 its
	// erl_child_setup; 30 another redis-server.
	procs := map[int]procStat{
		1: {comm: "init"}, 10: {comm: "postgres", ppid: 1}, 11: {comm: "postgres", ppid: 10},
		20: {comm: "beam.smp", ppid: 1}, 21: {comm: "erl_child_setup", ppid: 20},
		30: {comm: "redis-server", ppid: 1},
	}
	roots := map[int]bool{10: true, 20: true}
	comms := map[string]bool{"redis-server": true}
	for _, tc := range []struct {
		name  string
		pid   int
		roots map[int]bool
		want  bool
	}{
		{name: "Root", pid: 10, roots: roots, want: true},
		{name: "ChildOfRoot", pid: 11, roots: roots, want: true},
		{name: "GrandchildLineOfOtherRoot", pid: 21, roots: roots, want: true},
		{name: "NamedButNotUnderARoot", pid: 30, roots: roots, want: false},
		{name: "Init", pid: 1, roots: roots, want: false},
		{name: "ByNameWithoutRoots", pid: 30, want: true},
		{name: "OtherNameWithoutRoots", pid: 11, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inStack(tc.pid, procs, tc.roots, comms); got != tc.want {
				t.Errorf("inStack(%d) = %v, want %v", tc.pid, got, tc.want)
			}
		})
	}
}

func TestTicksSince(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[int]uint64
		want          uint64
	}{
		{name: "Grew", before: map[int]uint64{1: 10, 2: 5}, after: map[int]uint64{1: 15, 2: 7}, want: 7},
		{name: "NewProcessCountsWhole", before: map[int]uint64{1: 10}, after: map[int]uint64{1: 10, 3: 4}, want: 4},
		{name: "ExitedProcessTakesNothingOff", before: map[int]uint64{1: 10, 2: 500}, after: map[int]uint64{1: 12}, want: 2},
		{name: "ReusedPidCountsWhole", before: map[int]uint64{1: 500}, after: map[int]uint64{1: 3}, want: 3},
		{name: "Empty", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ticksSince(tc.before, tc.after); got != tc.want {
				t.Errorf("ticksSince = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMsPerDelivery(t *testing.T) {
	for _, tc := range []struct {
		ticks      uint64
		deliveries int
		want       float64
	}{
		{ticks: 100, deliveries: 1000, want: 1}, // one second of CPU over 1,000
		{ticks: 5, deliveries: 2000, want: 0.025},
		{ticks: 7, deliveries: 0, want: 0},
	} {
		if got := msPerDelivery(tc.ticks, tc.deliveries); got != tc.want {
			t.Errorf("msPerDelivery(%d, %d) = %v, want %v", tc.ticks, tc.deliveries, got, tc.want)
		}
	}
}
