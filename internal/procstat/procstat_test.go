package procstat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
	tests := []struct {
		name    string
		line    string
		want    Stat
		wantErr string
	}{
		{
			name: "postgres backend",
			line: "4242 (postgres) S 4100 4100 4100 0 -1 4194560 1200 0 0 0 250 37 12 3 20" + tail,
			want: Stat{Comm: "postgres", State: 'S', PPID: 4100, Own: 2870 * time.Millisecond, Children: 150 * time.Millisecond},
		},
		{
			name: "command name with spaces and parentheses",
			line: "7 (a (b) c) Z 1 7 7 0 -1 0 0 0 0 0 1 2 3 4 20" + tail,
			want: Stat{Comm: "a (b) c", State: 'Z', PPID: 1, Own: 30 * time.Millisecond, Children: 70 * time.Millisecond},
		},
		{name: "no command name", line: "7 postgres S 1", wantErr: "no (comm)"},
		{name: "too short", line: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 1 2", wantErr: "fields after the command name"},
		{name: "not a number", line: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 u 2 3 4 20" + tail, wantErr: "field 14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.line)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRead_ThisProcess(t *testing.T) {
	// Spend some CPU so that this process has used at least a tick.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	st, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(os.Args[0])
	if len(comm) > 15 { // the kernel keeps 15 bytes of it
		comm = comm[:15]
	}
	if st.Comm != comm || st.PPID != os.Getppid() || st.Own <= 0 {
		t.Fatalf("Read(self) = %+v, want command %q, parent %d, some CPU", st, comm, os.Getppid())
	}
	if _, err := Read(-1); err == nil {
		t.Fatal("Read(-1): no error")
	}
}

func TestParseSwitches(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr string
	}{
		{name: "both counts", status: "Name:\tserver\nThreads:\t9\nvoluntary_ctxt_switches:\t1200\nnonvoluntary_ctxt_switches:\t34\n", want: 1234},
		{name: "no trailing newline", status: "voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t0", want: 5},
		{name: "one count missing", status: "voluntary_ctxt_switches:\t5\n", wantErr: "1 of the two"},
		{name: "not a number", status: "voluntary_ctxt_switches:\tx\nnonvoluntary_ctxt_switches:\t0\n", wantErr: "voluntary_ctxt_switches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSwitches(tt.status)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSwitches: err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSwitches = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestSwitches_ThisProcess(t *testing.T) {
	before, err := Switches(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		time.Sleep(time.Millisecond) // each sleep switches a thread off its CPU
	}
	after, err := Switches(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after < before+10 {
		t.Fatalf("Switches: %d, then %d after 20 sleeps; want at least 10 more", before, after)
	}
	if _, err := Switches(-1); err == nil {
		t.Fatal("Switches(-1): no error")
	}
}
