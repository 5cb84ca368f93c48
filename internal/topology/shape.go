package topology

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Shape is the traffic a benchmark sends: how its events spread over
// webhooks and accounts.
type Shape string

const (
	// Concentrated sends every event of one account to each of its
	// webhooks (fan-out): few webhooks, always busy.
	Concentrated Shape = "concentrated"
	// Spread gives each event a webhook of its own (each webhook is for
	// its own job), none of which had an event before: many cold webhooks.
	Spread Shape = "spread"
	// Zipf draws each event's webhook Zipf-distributed (s = 1.1) over
	// webhooks in accounts of ten, each for its own job: skewed traffic.
	Zipf Shape = "zipf"
	// BigAccount sends the events to one job of an account with many
	// webhooks (each for its own job), and the same events to an account
	// with one webhook: what matching an event costs in a big account.
	BigAccount Shape = "bigaccount"
	// Runs sends each run's job.run.started and then its
	// job.run.completed to Webhooks webhooks of one account (for every
	// job): per-run order at work, each completed waiting while its
	// started is pending. Concentrated with the same sizes is its
	// unordered baseline.
	Runs Shape = "runs"
)

// Shapes are the shapes a benchmark can run.
var Shapes = []Shape{Concentrated, Spread, Zipf, BigAccount, Runs}

// ParseShape reads a shape's name; "" is Concentrated.
func ParseShape(name string) (Shape, error) {
	if name == "" {
		return Concentrated, nil
	}
	for _, s := range Shapes {
		if string(s) == name {
			return s, nil
		}
	}
	names := make([]string, len(Shapes))
	for i, s := range Shapes {
		names[i] = string(s)
	}
	return "", fmt.Errorf("unknown workload shape %q: want one of %s", name, strings.Join(names, ", "))
}

// Size is how much traffic a plan has. Events and Webhooks of 0 take the
// shape's defaults (DefaultSize).
type Size struct {
	Events int // of the burst
	// Webhooks: concentrated, per event; zipf, in all; bigaccount, in the
	// big account. Spread has one per event and ignores it.
	Webhooks int
	Rate     float64 // deliveries/s of the paced phase; 0 skips it
	Idle     int     // events sent one at a time; 0 skips the idle phase
}

// DefaultSize is the shape's burst when a run names none.
func DefaultSize(s Shape) Size {
	switch s {
	case Spread:
		return Size{Events: 2000, Webhooks: 2000}
	case Zipf:
		return Size{Events: 20000, Webhooks: 10000}
	case BigAccount:
		return Size{Events: 2000, Webhooks: 10000}
	case Runs:
		return Size{Events: 2000, Webhooks: 1}
	default:
		return Size{Events: 1000, Webhooks: 5}
	}
}

// Plan is a shape's workload before anything exists: the accounts and
// webhooks to make, and each phase's events by index into them.
type Plan struct {
	Shape    Shape
	Size     Size // with the defaults filled in
	Accounts []string
	Webhooks []WebhookSpec
	Parts    []PartPlan
}

// WebhookSpec is one webhook to make.
type WebhookSpec struct {
	Account int   // index into Plan.Accounts
	Job     int64 // the one job it is for; 0: every job
}

// PartPlan is one measured workload of a plan (bigaccount has two: the
// single-webhook account and the big one).
type PartPlan struct {
	Name                     string // "" when the plan has one part
	Warm, Burst, Paced, Idle []EventSpec
	PacedInterval            time.Duration
	Rate                     float64
}

// EventSpec is one event to send and the webhooks it must reach.
type EventSpec struct {
	Account  int
	Job      int64
	Webhooks []int // indices into Plan.Webhooks, each reached exactly once
	// Type is the event's type ("": job.run.completed); Run its run id
	// (0: the event's index in its phase).
	Type string
	Run  int
}

const (
	warmEvents = 20
	// concentratedJob is the job of concentrated events; their webhooks
	// are for every job.
	concentratedJob = 42
	zipfExponent    = 1.1
	zipfSeed        = 1 // the same draws in every run, so runs compare
	accountWebhooks = 10
)

// NewPlan lays out shape's workload of size.
func NewPlan(shape Shape, size Size) (Plan, error) {
	shape, err := ParseShape(string(shape))
	if err != nil {
		return Plan{}, err
	}
	def := DefaultSize(shape)
	if size.Events == 0 {
		size.Events = def.Events
	}
	if size.Webhooks == 0 {
		size.Webhooks = def.Webhooks
	}
	if shape == Spread {
		size.Webhooks = size.Events
	}
	if size.Events < 1 || size.Webhooks < 1 || size.Rate < 0 || size.Idle < 0 {
		return Plan{}, fmt.Errorf("workload %s: events and webhooks must be at least 1, rate and idle events not negative", shape)
	}
	b := &planner{Plan: Plan{Shape: shape, Size: size}}
	switch shape {
	case Concentrated:
		b.concentrated()
	case Spread:
		b.spread()
	case Zipf:
		b.zipf()
	case BigAccount:
		b.bigAccount()
	case Runs:
		b.runs()
	}
	return b.Plan, nil
}

type planner struct{ Plan }

func (b *planner) account(name string) int {
	b.Accounts = append(b.Accounts, name)
	return len(b.Accounts) - 1
}

// webhook adds a webhook of account for a job of its own.
func (b *planner) webhook(account int) int {
	b.Webhooks = append(b.Webhooks, WebhookSpec{Account: account, Job: int64(len(b.Webhooks) + 1)})
	return len(b.Webhooks) - 1
}

func (b *planner) to(hook int) EventSpec {
	w := b.Webhooks[hook]
	return EventSpec{Account: w.Account, Job: w.Job, Webhooks: []int{hook}}
}

func (b *planner) repeat(e EventSpec, n int) []EventSpec {
	out := make([]EventSpec, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// warm makes the warm-up of a shape whose measured webhooks must not see
// an event before their phase: it goes to a webhook of an account of its
// own. Call it once per plan.
func (b *planner) warm() []EventSpec {
	return b.repeat(b.to(b.webhook(b.account("warm-up"))), warmEvents)
}

// paced is how many events of fanout deliveries each make the paced phase
// (about ten seconds at the rate) and how far apart they are sent.
func (b *planner) paced(fanout int) (int, time.Duration) {
	if b.Size.Rate == 0 {
		return 0, 0
	}
	return max(1, int(b.Size.Rate*10/float64(fanout))), time.Duration(float64(time.Second) * float64(fanout) / b.Size.Rate)
}

// concentrated: one account, Webhooks webhooks for every job, every event
// to each of them; the warm-up goes to them too.
func (b *planner) concentrated() {
	a := b.account("concentrated")
	all := make([]int, b.Size.Webhooks)
	for i := range all {
		b.Webhooks = append(b.Webhooks, WebhookSpec{Account: a})
		all[i] = i
	}
	e := EventSpec{Account: a, Job: concentratedJob, Webhooks: all}
	paced, interval := b.paced(len(all))
	b.Parts = []PartPlan{{
		Warm: b.repeat(e, warmEvents), Burst: b.repeat(e, b.Size.Events), Paced: b.repeat(e, paced),
		Idle: b.repeat(e, b.Size.Idle), PacedInterval: interval, Rate: b.Size.Rate,
	}}
}

// spread: each phase's events go to webhooks of an account of the phase's
// own, one webhook per event, made before the run and cold until then.
func (b *planner) spread() {
	warm := b.warm()
	cold := func(phase string, n int) []EventSpec {
		if n == 0 {
			return nil
		}
		a := b.account(phase)
		events := make([]EventSpec, n)
		for i := range events {
			events[i] = b.to(b.webhook(a))
		}
		return events
	}
	paced, interval := b.paced(1)
	b.Parts = []PartPlan{{
		Warm: warm, Burst: cold("burst", b.Size.Events), Paced: cold("paced", paced), Idle: cold("idle", b.Size.Idle),
		PacedInterval: interval, Rate: b.Size.Rate,
	}}
}

// zipf: Webhooks webhooks in accounts of ten, each for its own job; every
// phase draws its events' webhooks from one Zipf distribution whose ranks
// are shuffled over the webhooks, so the busy ones are in different
// accounts.
func (b *planner) zipf() {
	warm := b.warm()
	hooks := make([]int, b.Size.Webhooks)
	for i := range hooks {
		if i%accountWebhooks == 0 {
			b.account(fmt.Sprintf("zipf %d", i/accountWebhooks+1))
		}
		hooks[i] = b.webhook(len(b.Accounts) - 1)
	}
	rng := rand.New(rand.NewPCG(zipfSeed, zipfSeed))
	rank := rand.NewZipf(rng, zipfExponent, 1, uint64(len(hooks)-1))
	byRank := rng.Perm(len(hooks))
	draw := func(n int) []EventSpec {
		events := make([]EventSpec, n)
		for i := range events {
			events[i] = b.to(hooks[byRank[rank.Uint64()]])
		}
		return events
	}
	paced, interval := b.paced(1)
	b.Parts = []PartPlan{{
		Warm: warm, Burst: draw(b.Size.Events), Paced: draw(paced), Idle: draw(b.Size.Idle),
		PacedInterval: interval, Rate: b.Size.Rate,
	}}
}

// bigAccount: the same events to the one webhook of a small account, then
// to one job of an account with Webhooks webhooks, each for its own job.
func (b *planner) bigAccount() {
	warm := b.warm()
	single := b.webhook(b.account("one webhook"))
	big := b.account("big")
	first := len(b.Webhooks)
	for range b.Size.Webhooks {
		b.webhook(big)
	}
	target := first + b.Size.Webhooks/2
	paced, interval := b.paced(1)
	part := func(name string, hook int) PartPlan {
		e := b.to(hook)
		return PartPlan{
			Name: name, Warm: warm, Burst: b.repeat(e, b.Size.Events), Paced: b.repeat(e, paced),
			Idle: b.repeat(e, b.Size.Idle), PacedInterval: interval, Rate: b.Size.Rate,
		}
	}
	b.Parts = []PartPlan{
		part("account-webhooks=1", single),
		part(fmt.Sprintf("account-webhooks=%d", b.Size.Webhooks), target),
	}
}

// runs: like concentrated, but each phase's events are runs: event 2k is
// run k's job.run.started, event 2k+1 its job.run.completed (run ids
// unique across phases).
func (b *planner) runs() {
	b.concentrated()
	next := 1
	pairs := func(events []EventSpec) []EventSpec {
		for i := range events {
			events[i].Run = next + i/2
			events[i].Type = "job.run.completed"
			if i%2 == 0 {
				events[i].Type = "job.run.started"
			}
		}
		next += (len(events) + 1) / 2
		return events
	}
	p := &b.Parts[0]
	p.Warm, p.Burst, p.Paced, p.Idle = pairs(p.Warm), pairs(p.Burst), pairs(p.Paced), pairs(p.Idle)
}
