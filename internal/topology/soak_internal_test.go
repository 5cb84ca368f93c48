package topology

import (
	"testing"
	"time"
)

func TestVmRSS(t *testing.T) {
	for _, c := range []struct {
		name, status string
		want         int64
	}{
		{"Linux", "Name:\twebhooks\nVmPeak:\t  900 kB\nVmRSS:\t   51234 kB\nRssAnon:\t 40000 kB\n", 51234 * 1024},
		{"NoLine", "Name:\tkthreadd\nState:\tS (sleeping)\n", 0},
		{"OtherUnit", "VmRSS:\t12 MB\n", 0},
		{"Garbled", "VmRSS:\tlots kB\n", 0},
	} {
		if got := vmRSS([]byte(c.status)); got != c.want {
			t.Errorf("%s: vmRSS = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSpreadEvenly(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want string
	}{
		{10, 0, ".........."},
		{10, 2, "x....x...."},
		{20, 1, "x..................."},
		{7, 7, "xxxxxxx"},
	} {
		got := ""
		for _, m := range spreadEvenly(c.n, c.k) {
			got += map[bool]string{true: "x", false: "."}[m]
		}
		if got != c.want {
			t.Errorf("spreadEvenly(%d, %d) = %s, want %s", c.n, c.k, got, c.want)
		}
	}
}

func TestSoakPlan_FailingShareSpreadOverAccountsOfTen(t *testing.T) {
	plan, failing, err := SoakPlan(1000, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Accounts) != 100 || len(plan.Webhooks) != 1000 || len(plan.Parts) != 1 || len(plan.Parts[0].Paced) != 1000 {
		t.Fatalf("plan: %d accounts, %d webhooks, %d parts; want 100, 1000, 1 with 1000 events", len(plan.Accounts), len(plan.Webhooks), len(plan.Parts))
	}
	n, gap := 0, 0
	for i, f := range failing {
		if f {
			n++
			if gap != 0 && gap != 19 {
				t.Errorf("failing webhook %d after %d healthy ones, want every 20th", i, gap)
			}
			gap = 0
		} else {
			gap++
		}
	}
	if n != 50 {
		t.Errorf("%d failing webhooks, want 50", n)
	}
	jobs := map[int64]bool{}
	for i, e := range plan.Parts[0].Paced {
		h := plan.Webhooks[i]
		if len(e.Webhooks) != 1 || e.Webhooks[0] != i || e.Job != h.Job || e.Account != h.Account || jobs[h.Job] {
			t.Fatalf("event %d = %+v for webhook %+v: want one event to each webhook, each for a job of its own", i, e, h)
		}
		jobs[h.Job] = true
	}
	for _, bad := range []float64{-0.1, 1} {
		if _, _, err := SoakPlan(10, bad); err == nil {
			t.Errorf("SoakPlan accepted a failing share of %g", bad)
		}
	}
}

func TestLatencyWindow_TakeSortsAndStartsAgain(t *testing.T) {
	var w LatencyWindow
	for _, d := range []time.Duration{30, 10, 20} {
		w.Add(d)
	}
	got := w.Take()
	if len(got) != 3 || got[0] != 10 || got[2] != 30 {
		t.Fatalf("Take = %v, want [10 20 30]", got)
	}
	if again := w.Take(); len(again) != 0 {
		t.Errorf("second Take = %v, want none", again)
	}
}

func TestPercentile(t *testing.T) {
	sorted := make([]time.Duration, 100)
	for i := range sorted {
		sorted[i] = time.Duration(i + 1)
	}
	for _, c := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 99, 0},
		{sorted[:1], 99, 1},
		{sorted, 50, 51},
		{sorted, 99, 100},
		{sorted[:10], 99, 10},
	} {
		if got := Percentile(c.in, c.p); got != c.want {
			t.Errorf("Percentile(%d values, %d) = %d, want %d", len(c.in), c.p, got, c.want)
		}
	}
}

func TestParseShare(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"5%", 0.05, false},
		{" 2.5 % ", 0.025, false},
		{"0.05", 0.05, false},
		{"0", 0, false},
		{"100%", 0, true},
		{"1", 0, true},
		{"-1%", 0, true},
		{"five", 0, true},
	} {
		got, err := ParseShare(c.in)
		if (err != nil) != c.err || (!c.err && (got < c.want-1e-12 || got > c.want+1e-12)) {
			t.Errorf("ParseShare(%q) = %g, %v; want %g, error %t", c.in, got, err, c.want, c.err)
		}
	}
}
