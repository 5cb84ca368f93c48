// Command webhooks-bench measures the webhooks binary end to end on one
// machine. It is a harness apart from the binary that ships, which never links it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/internal/topology"
)

const usage = `Usage: webhooks-bench [flags]

Measures delivery end to end: starts a Temporal dev server, a fresh
database, the API (webhooks serve) and a worker (webhooks worker) as separate
processes, and a loopback receiver for every webhook. It makes the accounts
and webhooks of a workload --shape in the database through the service's own
stores (secrets sealed with its keys), then, over HTTP only (the ingestion
endpoint), sends a burst of --events events from --concurrency senders, paces
events at --rate deliveries/s for about ten seconds, and sends --idle events
one at a time. Every delivery must arrive exactly once, signed, at its
webhook's URL. Shapes:
  concentrated  every event to each of --subscriptions webhooks of one account (default 1000 x 5)
  spread        each event to a webhook of its own that had no event before (default 2000)
  zipf          events drawn Zipf (s = 1.1) over --subscriptions webhooks in accounts of ten
                (default 20000 events, 10000 webhooks)
  bigaccount    events to one job of an account with --subscriptions webhooks, each for its own
                job, beside the same events to an account with one webhook (default 2000, 10000)
  runs          each run's job.run.started then its job.run.completed to --subscriptions webhooks
                of one account (default 2000 events, 1 webhook): per-run order at work
--receiver picks how the receiver answers (several separated by commas run
one after the other on the same deployment, each with accounts and webhooks
of its own):
  instant       200 at once (the default)
  delay         200 after --receiver-delay (200ms) at any concurrency
  knee          200 after --knee-step (20ms) x the requests it holds at once
  429           holds up to --receiver-limit (8) requests at once for --receiver-delay
                each and answers 429 to any above that
With --receiver, a burst waits at most --drain after its last event for its
deliveries, reports those still missing instead of failing, and reports what
the receiver saw: requests, 429s (all, and after the first 5 s), timeouts,
requests in flight (max, time-weighted average), and whether every delivery
arrived within a minute of the burst. Deliveries retry on the production
schedule unless the environment says otherwise.
It prints Go benchmark lines named after the shape: deliveries/s and
cpu-ms/delivery (the CPU of the API, worker and Temporal processes and of the
local PostgreSQL) of the burst, p50/p99 ingest-to-arrival latency at the rate,
and p99 one event at a time on the idle system. The processes measured are
--webhooks, by default this module's cmd/webhooks built with the go command.
Worker settings come from the environment as usual (for example
WORKER_MAX_CONCURRENT_DELIVERIES); the database server is DATABASE_URL's.`

// errUsage means the usage text has been printed already.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "webhooks-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	shape                     string
	events, subs, concurrency int
	rate                      float64
	idle                      int
	webhooks                  string // the binary measured; empty: build it
	receivers                 string // receiver shapes; empty: instant, unbounded
	receiver                  topology.ReceiverOptions
	drain                     time.Duration
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("webhooks-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.shape, "shape", "concentrated", "workload shape: concentrated, spread, zipf, bigaccount or runs")
	fs.IntVar(&o.events, "events", 0, "events of the burst (0: the shape's default)")
	fs.IntVar(&o.subs, "subscriptions", 0, "webhooks: per event (concentrated), in all (zipf), in the big account (bigaccount); 0: the shape's default")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent ingestion requests")
	fs.Float64Var(&o.rate, "rate", 150, "deliveries per second of the paced phase (0 skips it)")
	fs.IntVar(&o.idle, "idle", 50, "events sent one at a time on the idle system (0 skips it)")
	fs.StringVar(&o.webhooks, "webhooks", "", "path of the webhooks binary to measure (empty: go build ./cmd/webhooks)")
	fs.StringVar(&o.receivers, "receiver", "", "how the receiver answers: instant, delay, knee, 429, or several separated by commas")
	fs.DurationVar(&o.receiver.Delay, "receiver-delay", topology.DefaultReceiverDelay, "delay receiver: its latency; 429 receiver: how long it holds a request")
	fs.DurationVar(&o.receiver.Step, "knee-step", topology.DefaultKneeStep, "knee receiver: latency per request in flight")
	fs.IntVar(&o.receiver.Limit, "receiver-limit", topology.DefaultReceiverLimit, "429 receiver: requests held at once before it answers 429")
	fs.DurationVar(&o.drain, "drain", 5*time.Minute, "with --receiver: how long after a burst's last event its deliveries are waited for")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, flag.ErrHelp
		}
		return o, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return o, errUsage
	}
	if o.events < 0 || o.subs < 0 || o.concurrency < 1 || o.rate < 0 || o.idle < 0 || o.drain <= 0 {
		return o, errors.New("--concurrency must be at least 1, --drain positive, --events, --subscriptions, --rate and --idle not negative")
	}
	return o, nil
}

// run is the whole program; main only supplies the process's environment,
// so tests can start the real program in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	shape, err := topology.ParseShape(o.shape)
	if err != nil {
		return fmt.Errorf("--shape: %w", err)
	}
	plan, err := topology.NewPlan(shape, topology.Size{Events: o.events, Webhooks: o.subs, Rate: o.rate, Idle: o.idle})
	if err != nil {
		return err
	}
	receivers, err := topology.ParseReceiverShapes(o.receivers, o.receiver)
	if err != nil {
		return fmt.Errorf("--receiver: %w", err)
	}
	base, err := config.Load(getenv)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "webhooks-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.webhooks
	if bin == "" {
		if bin, err = buildWebhooks(ctx, dir); err != nil {
			return err
		}
	}
	d, err := startDeployment(ctx, bin, getenv, stderr, base.DatabaseURL, dir)
	if d != nil {
		defer d.stop()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bench %s: %d events, %d webhooks in %d accounts, %d senders, paced phase at %.0f deliveries/s (logs in %s while it runs)\n",
		shape, plan.Size.Events, len(plan.Webhooks), len(plan.Accounts), o.concurrency, o.rate, dir)
	for _, rs := range receivers {
		if err := d.measure(ctx, plan, rs, o, stdout); err != nil {
			return err
		}
	}
	return nil
}

// measure provisions plan at a receiver of shape rs and prints each of its
// parts' figures.
func (d *deployment) measure(ctx context.Context, plan topology.Plan, rs topology.ReceiverShape, o options, stdout io.Writer) error {
	recv, parts, err := d.provision(ctx, plan, rs)
	if err != nil {
		return err
	}
	var drain time.Duration
	if o.receivers != "" {
		drain = o.drain
	}
	var figures []topology.Figures
	for _, part := range parts {
		label, name := string(plan.Shape), "shape="+string(plan.Shape)
		if o.receivers != "" {
			label, name = label+" receiver="+rs.Name(), name+"/receiver="+rs.Name()
		}
		if part.Name != "" {
			label, name = label+" "+part.Name, name+"/"+part.Name
		}
		w := d.workload(recv, part.Traffic, o.concurrency)
		w.Drain = drain
		f, err := w.Run(ctx)
		if err != nil {
			return fmt.Errorf("bench %s (api log tail):\n%s\n%w", label, d.api.LogTail(2000), err)
		}
		fmt.Fprintf(stdout, "%s burst: %d deliveries in %s, ingest-to-arrival p50 %s p99 %s; CPU %s\n", label, f.Deliveries,
			f.Elapsed.Round(time.Millisecond), f.Burst.P50.Round(time.Millisecond), f.Burst.P99.Round(time.Millisecond), f.CPUSplit())
		if f.Drained {
			fmt.Fprintf(stdout, "%s burst, receiver's view: %s\n", label, f.LoadSummary())
		}
		if f.PacedDeliveries > 0 {
			fmt.Fprintf(stdout, "%s paced: %d deliveries at %.0f/s, ingest-to-arrival p50 %s p99 %s max %s\n", label, f.PacedDeliveries, f.Rate,
				f.Paced.P50.Round(time.Millisecond), f.Paced.P99.Round(time.Millisecond), f.Paced.Max.Round(time.Millisecond))
		}
		name = fmt.Sprintf("BenchmarkWebhooks/%s/events=%d/subscriptions=%d/concurrency=%d/rate=%g", name, plan.Size.Events, plan.Size.Webhooks, o.concurrency, o.rate)
		fmt.Fprintln(stdout, topology.BenchmarkLine(name, f.Metrics()))
		figures = append(figures, f)
	}
	if plan.Shape == topology.BigAccount && len(figures) == 2 && figures[0].CPUMsPerDelivery > 0 {
		fmt.Fprintf(stdout, "bigaccount: CPU per delivery %s / %s = %.2f\n", parts[1].Name, parts[0].Name,
			figures[1].CPUMsPerDelivery/figures[0].CPUMsPerDelivery)
	}
	return nil
}
