package topology

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewSoakWindows(t *testing.T) {
	for _, c := range []struct {
		name                     string
		duration, warmUp, window time.Duration
		want                     SoakWindows
		err                      bool
	}{
		{"Hour", time.Hour, 15 * time.Minute, 10 * time.Minute,
			SoakWindows{FirstFrom: 15 * time.Minute, FirstTo: 25 * time.Minute, LastFrom: 50 * time.Minute, LastTo: time.Hour}, false},
		{"ExactlyTwoWindows", 30 * time.Minute, 10 * time.Minute, 10 * time.Minute,
			SoakWindows{FirstFrom: 10 * time.Minute, FirstTo: 20 * time.Minute, LastFrom: 20 * time.Minute, LastTo: 30 * time.Minute}, false},
		{"ShortRunShrinks", 12 * time.Minute, 2 * time.Minute, 10 * time.Minute,
			SoakWindows{FirstFrom: 2 * time.Minute, FirstTo: 7 * time.Minute, LastFrom: 7 * time.Minute, LastTo: 12 * time.Minute, Shrunk: true}, false},
		{"WarmUpAsLongAsRun", 10 * time.Minute, 10 * time.Minute, time.Minute, SoakWindows{}, true},
		{"NoWindow", time.Hour, time.Minute, 0, SoakWindows{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := NewSoakWindows(c.duration, c.warmUp, c.window)
			if (err != nil) != c.err || got != c.want {
				t.Errorf("NewSoakWindows(%s, %s, %s) = %+v, %v; want %+v, error %t", c.duration, c.warmUp, c.window, got, err, c.want, c.err)
			}
		})
	}
}

func TestFlat_WithinToleranceEitherWay(t *testing.T) {
	for _, c := range []struct {
		first, last float64
		want        bool
	}{
		{100, 100, true},
		{100, 110, true},
		{100, 90, true},
		{100, 110.01, false},
		{100, 89.99, false},
		{100, 250, false},
		{0, 0, true},
		{0, 1, false},
	} {
		if got := flat(c.first, c.last, 0.10); got != c.want {
			t.Errorf("flat(%g, %g, 10 %%) = %t, want %t", c.first, c.last, got, c.want)
		}
	}
}

// samples makes one sample a minute for minutes, each from sample(i), i
// counting from 1 (the sample ending at i minutes).
func samples(minutes int, sample func(i int) SoakSample) []SoakSample {
	out := make([]SoakSample, minutes)
	for i := range out {
		s := sample(i + 1)
		s.At, s.Interval = time.Duration(i+1)*time.Minute, time.Minute
		out[i] = s
	}
	return out
}

func latencies(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func steady(i int) SoakSample {
	return SoakSample{Delivered: 600, Latencies: latencies(10, 20, 30, 40, 100),
		RSS:   map[string]int64{"api": 100 << 20, "worker-1": 200 << 20, "temporal": 300 << 20},
		AppDB: 50 << 20, TemporalDB: 80 << 20, Records: map[string]int64{"succeeded": 1000, "failed": 50}}
}

func verdictOf(t *testing.T, vs []Verdict, metric string) Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Metric == metric {
			return v
		}
	}
	t.Fatalf("no verdict for %q among %v", metric, vs)
	return Verdict{}
}

func TestJudgeSoak(t *testing.T) {
	w, err := NewSoakWindows(60*time.Minute, 15*time.Minute, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		sample   func(i int) SoakSample
		notFlat  []string // the metrics that must not be flat; every other must be
		passes   bool
		firstP99 float64
	}{
		{"Steady", steady, nil, true, 100},
		{"WorkerLeaks", func(i int) SoakSample {
			s := steady(i)
			s.RSS = map[string]int64{"api": 100 << 20, "worker-1": int64(200+4*i) << 20, "temporal": 300 << 20}
			return s
		}, []string{"RSS worker-1"}, false, 100},
		{"DatabaseGrows", func(i int) SoakSample {
			s := steady(i)
			s.AppDB = int64(10+i) << 20
			s.Records = map[string]int64{"succeeded": int64(100 * i)}
			return s
		}, []string{"app database", "deliveries kept"}, false, 100},
		{"TemporalGrowsUngated", func(i int) SoakSample {
			s := steady(i)
			s.TemporalDB = int64(10*i) << 20
			s.RSS["temporal"] = int64(100*i) << 20
			return s
		}, []string{"Temporal databases", "RSS temporal"}, true, 100},
		{"P99RisesDuringWarmUpOnly", func(i int) SoakSample {
			s := steady(i)
			if i <= 15 {
				s.Latencies = latencies(10, 20, 30, 40, 5000)
			}
			return s
		}, nil, true, 100},
		{"P99Doubles", func(i int) SoakSample {
			s := steady(i)
			if i > 50 {
				s.Latencies = latencies(10, 20, 30, 40, 200)
			}
			return s
		}, []string{"latency p99"}, false, 100},
		{"ThroughputFallsUngated", func(i int) SoakSample {
			s := steady(i)
			if i > 50 {
				s.Delivered = 300
			}
			return s
		}, []string{"delivered/s"}, true, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := JudgeSoak(samples(60, c.sample), w, SoakTolerance)
			for _, v := range vs {
				want := !slices.Contains(c.notFlat, v.Metric)
				if v.Flat != want || v.Missing {
					t.Errorf("%s: flat %t (first %g, last %g, missing %t), want flat %t", v.Metric, v.Flat, v.First, v.Last, v.Missing, want)
				}
			}
			if got := SoakFlat(vs); got != c.passes {
				t.Errorf("SoakFlat = %t, want %t", got, c.passes)
			}
			if p99 := verdictOf(t, vs, "latency p99"); p99.First != c.firstP99 {
				t.Errorf("first window's p99 = %g ms, want %g", p99.First, c.firstP99)
			}
		})
	}
}

func TestJudgeSoak_PoolsLatenciesOverTheWindow(t *testing.T) {
	// Each minute alone has a p99 of 10 ms or 1 s; the window's p99 is
	// taken over all its arrivals: 100 fast ones and one slow in every
	// other minute.
	w := SoakWindows{FirstFrom: 0, FirstTo: 10 * time.Minute, LastFrom: 10 * time.Minute, LastTo: 20 * time.Minute}
	vs := JudgeSoak(samples(20, func(i int) SoakSample {
		s := SoakSample{Latencies: make([]time.Duration, 100)}
		for j := range s.Latencies {
			s.Latencies[j] = 10 * time.Millisecond
		}
		if i%2 == 0 {
			s.Latencies = append(s.Latencies, time.Second)
		}
		return s
	}), w, SoakTolerance)
	if v := verdictOf(t, vs, "latency p99"); v.First != 10 || v.Last != 10 || !v.Flat {
		t.Errorf("pooled p99 = %g then %g ms (flat %t), want 10 and 10: 5 slow in 505", v.First, v.Last, v.Flat)
	}
}

func TestJudgeSoak_NoSamplesIsNoVerdict(t *testing.T) {
	w, _ := NewSoakWindows(60*time.Minute, 15*time.Minute, 10*time.Minute)
	vs := JudgeSoak(samples(30, steady), w, SoakTolerance) // the run stopped at 30 minutes
	v := verdictOf(t, vs, "RSS api")
	if !v.Missing || v.Flat || SoakFlat(vs) {
		t.Errorf("verdict with an empty last window = %+v, SoakFlat %t; want missing, not flat", v, SoakFlat(vs))
	}
	if !strings.Contains(VerdictTable(vs, w, SoakTolerance), "no samples") {
		t.Error("the table does not say a window had no samples")
	}
}

func TestVerdict_Change(t *testing.T) {
	if c := (Verdict{First: 200, Last: 230}).Change(); math.Abs(c-0.15) > 1e-9 {
		t.Errorf("change 200 -> 230 = %g, want 0.15", c)
	}
	if c := (Verdict{First: 0, Last: 1}).Change(); !math.IsNaN(c) {
		t.Errorf("change from 0 = %g, want NaN", c)
	}
}

func TestVerdict_String(t *testing.T) {
	v := Verdict{Metric: "app database", First: 100 << 20, Last: 177 << 20, unit: "B"}
	if got, want := v.String(), "app database: 100.0 MB over the first window, 177.0 MB over the last (+77.0 %)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestSoakTable_NoArrivalsIsNoLatency(t *testing.T) {
	table := SoakTable([]SoakSample{
		{At: time.Minute, Interval: time.Minute, Delivered: 1, Latencies: latencies(42)},
		{At: 2 * time.Minute, Interval: time.Minute},
	})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s\nwant a heading and two rows", table)
	}
	first, second := strings.Fields(lines[1]), strings.Fields(lines[2])
	if first[4] != "42" || first[5] != "42" || second[4] != "-" || second[5] != "-" {
		t.Errorf("table:\n%s\nwant p50 and p99 of 42 ms in the first row and - in the second", table)
	}
}

func TestPartitionChanges(t *testing.T) {
	tests := []struct {
		before, after []string
		made, dropped int
	}{
		{nil, []string{"a", "b"}, 2, 0},
		{[]string{"a", "b"}, []string{"a", "b"}, 0, 0},
		{[]string{"a", "b"}, []string{"b", "c", "d"}, 2, 1},
		{[]string{"a", "b"}, nil, 0, 2},
	}
	for _, tt := range tests {
		if made, dropped := PartitionChanges(tt.before, tt.after); made != tt.made || dropped != tt.dropped {
			t.Errorf("PartitionChanges(%v, %v) = +%d/-%d, want +%d/-%d", tt.before, tt.after, made, dropped, tt.made, tt.dropped)
		}
	}
	table := SoakTable([]SoakSample{
		{At: time.Minute, Interval: time.Minute, Partitions: []string{"a"}},
		{At: 2 * time.Minute, Interval: time.Minute, Partitions: []string{"b", "c"}},
	})
	// The partitions' column is the fourth from the end (the statements'
	// three follow it).
	cell := func(line string) string { f := strings.Fields(line); return f[len(f)-4] }
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 3 || cell(lines[2]) != "+2/-1" || cell(lines[1]) != "-" {
		t.Errorf("table:\n%s\nwant no partition change in the first row and +2/-1 in the second", table)
	}
}

func TestSoakTable_StatementsPerSecond(t *testing.T) {
	table := SoakTable([]SoakSample{
		{At: 30 * time.Second, Interval: 30 * time.Second, Statements: Statements{
			"ClaimShared": {Calls: 100, Exec: time.Second, Plans: 2, Plan: 20 * time.Millisecond},
			"[temporal]":  {Calls: 500, Exec: 5 * time.Second},
		}},
		{At: time.Minute, Interval: 30 * time.Second, Statements: Statements{
			"ClaimShared":    {Calls: 400, Exec: 7 * time.Second, Plans: 8, Plan: 80 * time.Millisecond},
			"RecordAttempts": {Calls: 300, Exec: 3 * time.Second, Plans: 1, Plan: 15 * time.Millisecond},
			"[temporal]":     {Calls: 900, Exec: 50 * time.Second},
		}},
		{At: 90 * time.Second, Interval: 30 * time.Second}, // pg_stat_statements unreadable
	})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s\nwant a header and three rows", table)
	}
	last3 := func(line string) string { f := strings.Fields(line); return strings.Join(f[len(f)-3:], " ") }
	// The second interval: 9 s of the app's statements and 75 ms of
	// planning over 30 s (Temporal's database left out), 7 plans.
	for i, want := range []string{"- - -", "300 2.5 0.23", "- - -"} {
		if got := last3(lines[i+1]); got != want {
			t.Errorf("row %d statements %q, want %q\n%s", i+1, got, want, table)
		}
	}
}
