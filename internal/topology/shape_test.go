package topology_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/internal/topology"
)

func TestParseShape(t *testing.T) {
	for _, c := range []struct {
		name string
		want topology.Shape
	}{
		{"", topology.Concentrated},
		{"concentrated", topology.Concentrated},
		{"spread", topology.Spread},
		{"zipf", topology.Zipf},
		{"bigaccount", topology.BigAccount},
		{"runs", topology.Runs},
	} {
		if got, err := topology.ParseShape(c.name); err != nil || got != c.want {
			t.Errorf("ParseShape(%q) = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseShape_RefusesAnUnknownShapeNamingTheKnownOnes(t *testing.T) {
	for _, name := range []string{"Zipf", "uniform", " spread"} {
		_, err := topology.ParseShape(name)
		if err == nil {
			t.Fatalf("ParseShape(%q) accepted it", name)
		}
		msg := err.Error()
		if !strings.Contains(msg, `unknown workload shape "`+name+`"`) || !strings.Contains(msg, "concentrated, spread, zipf, bigaccount, runs") {
			t.Errorf("ParseShape(%q): %q does not name the shape and the known ones", name, msg)
		}
	}
	if _, err := topology.NewPlan("uniform", topology.Size{}); err == nil || !strings.Contains(err.Error(), `unknown workload shape "uniform"`) {
		t.Errorf("NewPlan(uniform) = %v, want the shape refused", err)
	}
	if p, err := topology.NewPlan("", topology.Size{}); err != nil || p.Shape != topology.Concentrated || len(p.Parts) != 1 || len(p.Parts[0].Burst) != 1000 {
		t.Errorf("NewPlan with no shape: %v, %d parts; want concentrated's 1,000 events", err, len(p.Parts))
	}
}

func TestNewPlan_ConcentratedSendsEveryEventToEveryWebhook(t *testing.T) {
	p := mustPlan(t, topology.Concentrated, topology.Size{Events: 30, Webhooks: 3, Rate: 150, Idle: 4})
	if len(p.Accounts) != 1 || len(p.Webhooks) != 3 || len(p.Parts) != 1 {
		t.Fatalf("plan: %d accounts, %d webhooks, %d parts; want 1, 3, 1", len(p.Accounts), len(p.Webhooks), len(p.Parts))
	}
	for _, w := range p.Webhooks {
		if w.Job != 0 {
			t.Errorf("webhook for job %d, want every job", w.Job)
		}
	}
	part := p.Parts[0]
	if len(part.Burst) != 30 || len(part.Idle) != 4 || len(part.Warm) == 0 {
		t.Fatalf("burst %d, idle %d, warm %d events; want 30, 4, some", len(part.Burst), len(part.Idle), len(part.Warm))
	}
	for _, e := range slices.Concat(part.Warm, part.Burst, part.Paced, part.Idle) {
		if !slices.Equal(e.Webhooks, []int{0, 1, 2}) {
			t.Fatalf("event to %v, want all three webhooks", e.Webhooks)
		}
	}
	// 150 deliveries/s for ten seconds, three per event: 500 events 20 ms apart.
	if len(part.Paced) != 500 || part.PacedInterval.Milliseconds() != 20 {
		t.Errorf("paced: %d events %s apart, want 500 and 20ms", len(part.Paced), part.PacedInterval)
	}
}

func TestNewPlan_SpreadGivesEachEventAColdWebhookOfItsOwn(t *testing.T) {
	p := mustPlan(t, topology.Spread, topology.Size{Events: 200, Webhooks: 7, Rate: 10, Idle: 5})
	part := p.Parts[0]
	if len(part.Burst) != 200 || len(part.Paced) != 100 || len(part.Idle) != 5 {
		t.Fatalf("burst %d, paced %d, idle %d events; want 200, 100, 5", len(part.Burst), len(part.Paced), len(part.Idle))
	}
	seen := map[int]string{}
	for phase, events := range map[string][]topology.EventSpec{"warm": part.Warm, "burst": part.Burst, "paced": part.Paced, "idle": part.Idle} {
		for _, e := range events {
			if len(e.Webhooks) != 1 {
				t.Fatalf("%s event to %d webhooks, want one", phase, len(e.Webhooks))
			}
			h := e.Webhooks[0]
			w := p.Webhooks[h]
			if w.Job == 0 || e.Job != w.Job || e.Account != w.Account {
				t.Errorf("%s event (account %d, job %d) to webhook %d (account %d, job %d): want the webhook's own job and account",
					phase, e.Account, e.Job, h, w.Account, w.Job)
			}
			if other, ok := seen[h]; ok && (other != "warm" || phase != "warm") {
				t.Errorf("webhook %d gets events of %s and %s: each measured event needs a webhook of its own", h, other, phase)
			}
			seen[h] = phase
		}
	}
	jobs := map[int64]bool{}
	for _, w := range p.Webhooks {
		if jobs[w.Job] {
			t.Errorf("job %d has two webhooks", w.Job)
		}
		jobs[w.Job] = true
	}
	// Each measured phase has an account of its own holding only its
	// webhooks, so the burst's account has exactly N webhooks.
	burstAccount := part.Burst[0].Account
	n := 0
	for _, w := range p.Webhooks {
		if w.Account == burstAccount {
			n++
		}
	}
	if n != 200 {
		t.Errorf("the burst's account has %d webhooks, want 200", n)
	}
}

func TestNewPlan_ZipfDrawsWithinRangeAndSkewed(t *testing.T) {
	p := mustPlan(t, topology.Zipf, topology.Size{Rate: 100, Idle: 10})
	if p.Size.Events != 20000 || p.Size.Webhooks != 10000 {
		t.Fatalf("default size %+v, want 20,000 events over 10,000 webhooks", p.Size)
	}
	perAccount := map[int]int{}
	for _, w := range p.Webhooks {
		perAccount[w.Account]++
	}
	// 1,000 accounts of ten, and the warm-up's account of one.
	if len(perAccount) != 1001 || len(p.Webhooks) != 10001 {
		t.Fatalf("%d webhooks in %d accounts, want 10,001 in 1,001", len(p.Webhooks), len(perAccount))
	}
	part := p.Parts[0]
	warm := part.Warm[0].Webhooks[0]
	counts := make([]int, len(p.Webhooks))
	for _, e := range slices.Concat(part.Burst, part.Paced, part.Idle) {
		if len(e.Webhooks) != 1 {
			t.Fatalf("event to %d webhooks, want one", len(e.Webhooks))
		}
		h := e.Webhooks[0]
		if h < 0 || h >= len(p.Webhooks) || h == warm {
			t.Fatalf("drew webhook %d, outside the 10,000 measured ones", h)
		}
		if w := p.Webhooks[h]; e.Job != w.Job || e.Account != w.Account || perAccount[w.Account] != 10 {
			t.Fatalf("event (account %d, job %d) to webhook %+v", e.Account, e.Job, w)
		}
		counts[h]++
	}
	measured := slices.Delete(slices.Clone(counts), warm, warm+1)
	slices.Sort(measured)
	top, median := measured[len(measured)-1], measured[len(measured)/2]
	if top < 100*max(1, median) {
		t.Errorf("top webhook got %d events, the median %d: not skewed", top, median)
	}
	if top > len(part.Burst)/2 {
		t.Errorf("top webhook got %d of %d events: more than Zipf with s = 1.1 gives the first rank", top, len(part.Burst))
	}
	var busiest []int // the ten busiest webhooks' accounts
	for range 10 {
		i := slices.Index(counts, slices.Max(counts))
		busiest = append(busiest, p.Webhooks[i].Account)
		counts[i] = -1
	}
	slices.Sort(busiest)
	if len(slices.Compact(busiest)) < 5 {
		t.Errorf("the ten busiest webhooks are in accounts %v: ranks should spread over accounts", busiest)
	}
	if again := mustPlan(t, topology.Zipf, topology.Size{Rate: 100, Idle: 10}); !slices.EqualFunc(again.Parts[0].Burst, part.Burst, func(a, b topology.EventSpec) bool {
		return a.Webhooks[0] == b.Webhooks[0]
	}) {
		t.Error("two plans drew different events: runs would not compare")
	}
}

func TestNewPlan_BigAccountSendsTheSameEventsToOneJobOfEachAccount(t *testing.T) {
	p := mustPlan(t, topology.BigAccount, topology.Size{Events: 50, Webhooks: 300, Rate: 20, Idle: 3})
	if len(p.Parts) != 2 || p.Parts[0].Name != "account-webhooks=1" || p.Parts[1].Name != "account-webhooks=300" {
		t.Fatalf("parts %v, want account-webhooks=1 and account-webhooks=300", p.Parts)
	}
	perAccount := map[int]int{}
	for _, w := range p.Webhooks {
		perAccount[w.Account]++
	}
	for i, want := range []int{1, 300} {
		part := p.Parts[i]
		if len(part.Burst) != 50 || len(part.Paced) != 200 || len(part.Idle) != 3 {
			t.Fatalf("%s: burst %d, paced %d, idle %d; want 50, 200, 3", part.Name, len(part.Burst), len(part.Paced), len(part.Idle))
		}
		first := part.Burst[0]
		for _, e := range slices.Concat(part.Burst, part.Paced, part.Idle) {
			if !slices.Equal(e.Webhooks, first.Webhooks) || e.Job != first.Job || len(e.Webhooks) != 1 {
				t.Fatalf("%s: event %+v, want every event to the one webhook %v of job %d", part.Name, e, first.Webhooks, first.Job)
			}
		}
		if n := perAccount[first.Account]; n != want {
			t.Errorf("%s: the account has %d webhooks, want %d", part.Name, n, want)
		}
		if w := p.Webhooks[first.Webhooks[0]]; w.Job != first.Job {
			t.Errorf("%s: events of job %d to the webhook of job %d", part.Name, first.Job, w.Job)
		}
	}
}

func mustPlan(t *testing.T, shape topology.Shape, size topology.Size) topology.Plan {
	t.Helper()
	p, err := topology.NewPlan(shape, size)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPlan_RunsPairEachRunsStartedAndCompleted(t *testing.T) {
	plan, err := topology.NewPlan(topology.Runs, topology.Size{Events: 6, Idle: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Webhooks) != 1 || plan.Webhooks[0].Job != 0 {
		t.Fatalf("webhooks %+v, want one for every job", plan.Webhooks)
	}
	seen := map[int]bool{}
	for _, phase := range [][]topology.EventSpec{plan.Parts[0].Warm, plan.Parts[0].Burst, plan.Parts[0].Idle} {
		for i, e := range phase {
			want := "job.run.started"
			if i%2 == 1 {
				want = "job.run.completed"
			}
			if e.Type != want {
				t.Errorf("event %d is %s, want %s", i, e.Type, want)
			}
			if i%2 == 1 && e.Run != phase[i-1].Run {
				t.Errorf("event %d is run %d, its started's run is %d", i, e.Run, phase[i-1].Run)
			}
			if i%2 == 0 {
				if seen[e.Run] {
					t.Errorf("run %d is used twice", e.Run)
				}
				seen[e.Run] = true
			}
		}
	}
	if got := len(plan.Parts[0].Burst); got != 6 {
		t.Errorf("burst of %d events, want 6 (3 runs)", got)
	}
}
