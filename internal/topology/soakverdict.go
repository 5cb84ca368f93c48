package topology

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// SoakWindows are the two stretches of a soak that its verdicts compare:
// the first Window after the warm-up, and the last Window of the run.
// Each is (from, to], in time since the traffic started.
type SoakWindows struct {
	FirstFrom, FirstTo time.Duration
	LastFrom, LastTo   time.Duration
	// Shrunk: the run after its warm-up was shorter than two windows, so
	// each window is half of it (a short run; the windows touch).
	Shrunk bool
}

// NewSoakWindows places the windows of a run of duration: the first
// starts when the warm-up ends, the last ends with the run.
func NewSoakWindows(duration, warmUp, window time.Duration) (SoakWindows, error) {
	measured := duration - warmUp
	if warmUp < 0 || window <= 0 || measured <= 0 {
		return SoakWindows{}, fmt.Errorf("soak: the run (%s) must outlast its warm-up (%s), and the window (%s) be positive", duration, warmUp, window)
	}
	w := SoakWindows{}
	if 2*window > measured {
		window, w.Shrunk = measured/2, true
	}
	w.FirstFrom, w.FirstTo = warmUp, warmUp+window
	w.LastFrom, w.LastTo = duration-window, duration
	return w, nil
}

// split returns the samples of each window: a sample belongs to the window
// its interval's middle falls in.
func (w SoakWindows) split(samples []SoakSample) (first, last []SoakSample) {
	for _, s := range samples {
		mid := s.At - s.Interval/2
		if mid > w.FirstFrom && mid <= w.FirstTo {
			first = append(first, s)
		}
		if mid > w.LastFrom && mid <= w.LastTo {
			last = append(last, s)
		}
	}
	return first, last
}

// SoakTolerance is how far the last window's figure may be from the first
// window's, either way, for the metric to count as flat.
const SoakTolerance = 0.10

// Verdict is one metric of a soak: its figure over the first and the last
// window, and whether the last is within the tolerance of the first.
type Verdict struct {
	Metric      string
	First, Last float64
	Flat        bool
	// Gate: the metric is one the soak must hold flat (latency p99, the
	// API's and workers' memory, the app database's size); the others are
	// shown for reading the gated ones.
	Gate bool
	// Missing: a window had no samples (the run was too short, or a
	// reading failed throughout), so there is no verdict.
	Missing bool
	unit    string
}

// Change is the last window's figure relative to the first's (+0.05: 5 %
// higher); NaN when the first is 0.
func (v Verdict) Change() float64 {
	if v.First == 0 {
		return math.NaN()
	}
	return v.Last/v.First - 1
}

// flat is the verdict rule: the last figure is within tolerance of the
// first, either way; a first figure of 0 is flat only if the last is too.
func flat(first, last, tolerance float64) bool {
	if first == 0 {
		return last == 0
	}
	return math.Abs(last-first) <= tolerance*math.Abs(first)
}

// soakMetric is one figure a window of samples yields.
type soakMetric struct {
	name, unit string
	gate       bool
	// of is the figure over the window's samples; false when they have
	// none.
	of func(window []SoakSample) (float64, bool)
}

// soakMetrics are the metrics judged: latency percentiles over every
// arrival of a window (pooled, not an average of per-interval
// percentiles), delivered/s over the window, and the means of the
// memory and size readings.
func soakMetrics(samples []SoakSample) []soakMetric {
	latency := func(p int) func([]SoakSample) (float64, bool) {
		return func(w []SoakSample) (float64, bool) {
			var all []time.Duration
			for _, s := range w {
				all = append(all, s.Latencies...)
			}
			if len(all) == 0 {
				return 0, false
			}
			slices.Sort(all)
			return float64(Percentile(all, p)) / float64(time.Millisecond), true
		}
	}
	mean := func(read func(SoakSample) (int64, bool)) func([]SoakSample) (float64, bool) {
		return func(w []SoakSample) (float64, bool) {
			var sum float64
			n := 0
			for _, s := range w {
				if v, ok := read(s); ok {
					sum += float64(v)
					n++
				}
			}
			if n == 0 {
				return 0, false
			}
			return sum / float64(n), true
		}
	}
	metrics := []soakMetric{
		{name: "latency p99", unit: "ms", gate: true, of: latency(99)},
		{name: "latency p50", unit: "ms", of: latency(50)},
		{name: "delivered/s", unit: "/s", of: func(w []SoakSample) (float64, bool) {
			var n int
			var span time.Duration
			for _, s := range w {
				n, span = n+s.Delivered, span+s.Interval
			}
			if span <= 0 {
				return 0, false
			}
			return float64(n) / span.Seconds(), true
		}},
	}
	for _, p := range processNames(samples) {
		metrics = append(metrics, soakMetric{name: "RSS " + p, unit: "B", gate: p != "temporal",
			of: mean(func(s SoakSample) (int64, bool) { v := s.RSS[p]; return v, v > 0 })})
	}
	return append(metrics,
		soakMetric{name: "app database", unit: "B", gate: true,
			of: mean(func(s SoakSample) (int64, bool) { return s.AppDB, s.AppDB > 0 })},
		soakMetric{name: "Temporal databases", unit: "B",
			of: mean(func(s SoakSample) (int64, bool) { return s.TemporalDB, s.TemporalDB > 0 })},
		soakMetric{name: "deliveries kept", unit: "",
			of: mean(func(s SoakSample) (int64, bool) { return sumValues(s.Records), s.Records != nil })},
	)
}

// JudgeSoak gives each metric its verdict: flat when its figure over the
// last window is within tolerance of its figure over the first.
func JudgeSoak(samples []SoakSample, w SoakWindows, tolerance float64) []Verdict {
	first, last := w.split(samples)
	var out []Verdict
	for _, m := range soakMetrics(samples) {
		v := Verdict{Metric: m.name, Gate: m.gate, unit: m.unit}
		var ok1, ok2 bool
		v.First, ok1 = m.of(first)
		v.Last, ok2 = m.of(last)
		v.Missing = !ok1 || !ok2
		v.Flat = !v.Missing && flat(v.First, v.Last, tolerance)
		out = append(out, v)
	}
	return out
}

// SoakFlat says whether every gated metric is flat.
func SoakFlat(verdicts []Verdict) bool {
	for _, v := range verdicts {
		if v.Gate && !v.Flat {
			return false
		}
	}
	return true
}

// processNames are the processes sampled, in name order.
func processNames(samples []SoakSample) []string {
	var names []string
	for _, s := range samples {
		for n := range s.RSS {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

func sumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func mb(b float64) string { return fmt.Sprintf("%.1f MB", b/(1<<20)) }

func (v Verdict) format(x float64) string {
	switch v.unit {
	case "B":
		return mb(x)
	case "ms":
		return fmt.Sprintf("%.0f ms", x)
	case "/s":
		return fmt.Sprintf("%.1f/s", x)
	}
	return fmt.Sprintf("%.0f", x)
}

// String says the verdict in words, for a failure message.
func (v Verdict) String() string {
	if v.Missing {
		return v.Metric + ": a window had no samples"
	}
	return fmt.Sprintf("%s: %s over the first window, %s over the last (%+.1f %%)", v.Metric, v.format(v.First), v.format(v.Last), 100*v.Change())
}

// VerdictTable prints the verdicts, gated metrics marked.
func VerdictTable(verdicts []Verdict, w SoakWindows, tolerance float64) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tfirst %s-%s\tlast %s-%s\tchange\tverdict (within %.0f %%)\n",
		w.FirstFrom, w.FirstTo, w.LastFrom, w.LastTo, 100*tolerance)
	for _, v := range verdicts {
		name := v.Metric
		if v.Gate {
			name += " *"
		}
		verdict, change := "flat", fmt.Sprintf("%+.1f %%", 100*v.Change())
		switch {
		case v.Missing:
			verdict, change = "no samples", ""
		case v.First == 0:
			change = ""
			if !v.Flat {
				verdict = "NOT FLAT"
			}
		case !v.Flat:
			verdict = "NOT FLAT"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, v.format(v.First), v.format(v.Last), change, verdict)
	}
	tw.Flush()
	b.WriteString("* gated: the soak passes when every gated metric is flat\n")
	return b.String()
}

// SoakTable prints one row per sample.
func SoakTable(samples []SoakSample) string {
	procs := processNames(samples)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"at", "sent/s", "delivered/s", "500s/s", "p50 ms", "p99 ms"}
	for _, p := range procs {
		head = append(head, p+" MB")
	}
	head = append(head, "app DB MB", "Temporal DB MB", "kept", "pending", "oldest pending", "partitions +/-",
		"statements ms/s", "planning ms/s", "plans/s")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i, s := range samples {
		sec := s.Interval.Seconds()
		p50, p99 := "-", "-" // nothing arrived: no latency, not a fast one
		if len(s.Latencies) > 0 {
			p50, p99 = fmt.Sprint(s.P50().Milliseconds()), fmt.Sprint(s.P99().Milliseconds())
		}
		row := []string{s.At.Round(time.Second).String(),
			fmt.Sprintf("%.1f", float64(s.Sent)/sec), fmt.Sprintf("%.1f", float64(s.Delivered)/sec), fmt.Sprintf("%.1f", float64(s.FailedRequests)/sec),
			p50, p99}
		for _, p := range procs {
			row = append(row, fmt.Sprintf("%.0f", float64(s.RSS[p])/(1<<20)))
		}
		pending := sumValues(s.Records) - s.Records["succeeded"] - s.Records["failed"] - s.Records["skipped"] - s.Records["cancelled"]
		row = append(row, fmt.Sprintf("%.1f", float64(s.AppDB)/(1<<20)), fmt.Sprintf("%.1f", float64(s.TemporalDB)/(1<<20)),
			fmt.Sprint(sumValues(s.Records)), fmt.Sprint(pending), s.OldestPending.Round(time.Second).String(), partitionCell(samples[:i], s))
		row = append(row, statementCells(samples[:i], s)...)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	return b.String()
}

// statementCells are the app database's statements' execution and
// planning time a second, and its plans a second, since the sample before
// s ("-" without one, or without statements).
func statementCells(before []SoakSample, s SoakSample) []string {
	if len(before) == 0 || before[len(before)-1].Statements == nil || s.Statements == nil || s.Interval <= 0 {
		return []string{"-", "-", "-"}
	}
	d := s.Statements.Own().minus(before[len(before)-1].Statements.Own())
	sec := s.Interval.Seconds()
	return []string{fmt.Sprintf("%.0f", float64(d.Exec.Microseconds())/1000/sec), fmt.Sprintf("%.1f", float64(d.Plan.Microseconds())/1000/sec),
		fmt.Sprintf("%.2f", float64(d.Plans)/sec)}
}

// partitionCell is the partitions made and dropped since the sample before
// s, or "-" without one (or without its list).
func partitionCell(before []SoakSample, s SoakSample) string {
	if len(before) == 0 || before[len(before)-1].Partitions == nil || s.Partitions == nil {
		return "-"
	}
	made, dropped := PartitionChanges(before[len(before)-1].Partitions, s.Partitions)
	return fmt.Sprintf("+%d/-%d", made, dropped)
}

// TableGrowth prints the app database's largest tables at the end of the
// first window and at the end of the run.
func TableGrowth(first, last []TableSize) string {
	size := func(ts []TableSize, name string) string {
		for _, t := range ts {
			if t.Name == name {
				return mb(float64(t.Bytes))
			}
		}
		return "-"
	}
	var names []string
	for _, t := range slices.Concat(last, first) {
		if !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table (with indexes and TOAST)\tend of first window\tend of run")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, size(first, n), size(last, n))
	}
	tw.Flush()
	return b.String()
}
