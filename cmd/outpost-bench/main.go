// Command outpost-bench measures Outpost (hookdeck/outpost), the webhook
// service we compare ourselves with, on the workloads of webhooks-bench. It
// drives an Outpost that is already running (scripts/outpost-bench starts
// one); it is a harness and never part of the service or of CI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const usage = `Usage: outpost-bench [flags]

Drives a running Outpost through its API: for each --receiver it starts a
loopback receiver, makes tenants and webhook destinations (signing secrets of
its own) through the admin API, publishes a warm-up of --warmup events and
then three phases of --events events, one event per publish request from
--senders concurrent senders:
  concentrated        every event to one destination (its tenant's only one)
  spread              each event to its own destination that never had an
                      event, all in one tenant of --events destinations;
                      --spread-route destination names it in the publish
                      (destination_id), filter matches it by the
                      destination's filter on data.jobId
  concentrated-again  every event to the first phase's destination again
Receivers (several separated by commas run one after the other):
  instant             200 at once
  delay               200 after --receiver-delay (200ms)
Each event must arrive once at its destination's path with a valid
X-Outpost-Signature (v0= hex HMAC-SHA256 of the body); duplicates, bad
signatures, wrong paths and missing events are reported. A phase with no
arrival for --drain stops waiting and reports what is missing.
It prints one Go benchmark line per phase (benchstat reads them):
deliveries/s from the first publish to the last arrival; box-cpu-ms/delivery,
all CPU time of the machine over that time (from /proc/stat: this driver and
its receiver count, and so does anything else running); stack-cpu-ms/delivery,
the CPU of Outpost, Redis, RabbitMQ and the PostgreSQL server over the same
time (the processes --stack-pids lists and their descendants, or else every
process named in --stack); p50-ms and p99-ms from each publish's 202 to
the event's arrival. With --log-db it also waits for the phase's attempts in
Outpost's PostgreSQL log store and adds stack-cpu-ms/delivery-logged, the
stack's CPU from the first publish until they are all there (Outpost writes
them after the deliveries, in batches: seconds of the box's background would
swamp the box's figure).
First it reads the CPU the box and the stack use with no traffic over
--background, the floor under the phases' figures.
Outpost's own settings (DELIVERY_MAX_CONCURRENCY above all) are its
environment's: --delivery-concurrency only labels the output with it.`

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
		fmt.Fprintln(os.Stderr, "outpost-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	api, apiKey         string
	receivers           []string
	receiverDelay       time.Duration
	events, warmup      int
	senders, provisions int
	spreadRoute         string
	drain, logWait      time.Duration
	background          time.Duration
	logDB               string
	stack               stackSpec
	concurrency         int
	outpostCommit       string
}

// defaultStack is the command names of Outpost's processes and of the
// servers it uses: Redis, RabbitMQ's Erlang VM and helpers, PostgreSQL.
const defaultStack = "outpost-server,outpost,redis-server,beam.smp,erl_child_setup,epmd,inet_gethost,postgres"

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("outpost-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	var o options
	var receivers, stack, stackPIDs string
	fs.StringVar(&o.api, "api", "http://127.0.0.1:3334", "Outpost's API address")
	fs.StringVar(&o.apiKey, "api-key", "", "Outpost's API_KEY (default: $OUTPOST_API_KEY)")
	fs.StringVar(&receivers, "receiver", "instant", "how the receiver answers: instant, delay, or both separated by commas")
	fs.DurationVar(&o.receiverDelay, "receiver-delay", 200*time.Millisecond, "delay receiver: how long it waits before its 200")
	fs.IntVar(&o.events, "events", 2000, "events of each phase")
	fs.IntVar(&o.warmup, "warmup", 20, "events of the warm-up before the phases, not measured")
	fs.IntVar(&o.senders, "senders", 32, "concurrent publish requests")
	fs.IntVar(&o.provisions, "provisioners", 8, "concurrent requests that make destinations")
	fs.StringVar(&o.spreadRoute, "spread-route", routeDestination, "how a spread event finds its destination: destination or filter")
	fs.DurationVar(&o.drain, "drain", 2*time.Minute, "a phase stops waiting after this long without an arrival")
	fs.StringVar(&o.logDB, "log-db", "", "Outpost's POSTGRES_URL: wait for each phase's attempts in its log store (empty: do not)")
	fs.DurationVar(&o.logWait, "log-wait", time.Minute, "with --log-db: how long to wait for a phase's attempts")
	fs.StringVar(&stackPIDs, "stack-pids", "", "pids whose CPU, with their descendants', is stack-cpu-ms, separated by commas (empty: --stack)")
	fs.StringVar(&stack, "stack", defaultStack, "without --stack-pids: command names (/proc/<pid>/comm) whose CPU is stack-cpu-ms, separated by commas")
	fs.DurationVar(&o.background, "background", 5*time.Second, "how long to read the idle box's and stack's CPU before the phases (0: not)")
	fs.IntVar(&o.concurrency, "delivery-concurrency", 0, "Outpost's DELIVERY_MAX_CONCURRENCY, for the output only (0: not known)")
	fs.StringVar(&o.outpostCommit, "outpost-commit", "", "the Outpost commit measured, for the output only")
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
	o.receivers = strings.Split(receivers, ",")
	var err error
	if o.stack, err = parseStack(stackPIDs, stack); err != nil {
		return o, err
	}
	return o, validate(o)
}

// parseStack reads --stack-pids and --stack.
func parseStack(pids, names string) (stackSpec, error) {
	st := stackSpec{roots: map[int]bool{}, comms: map[string]bool{}}
	for _, c := range strings.Split(names, ",") {
		st.comms[strings.TrimSpace(c)] = true
	}
	for _, p := range strings.Split(pids, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid < 2 {
			return st, fmt.Errorf("--stack-pids: %q is not a process id", p)
		}
		st.roots[pid] = true
	}
	return st, nil
}

func validate(o options) error {
	for _, r := range o.receivers {
		if r != "instant" && r != "delay" {
			return fmt.Errorf("--receiver: unknown receiver %q (instant or delay)", r)
		}
	}
	switch {
	case o.events < 1 || o.warmup < 0 || o.senders < 1 || o.provisions < 1:
		return errors.New("--events, --senders and --provisioners must be at least 1, --warmup not negative")
	case o.spreadRoute != routeDestination && o.spreadRoute != routeFilter:
		return fmt.Errorf("--spread-route: %q is not destination or filter", o.spreadRoute)
	case o.drain <= 0 || o.logWait <= 0 || o.background < 0:
		return errors.New("--drain and --log-wait must be positive, --background not negative")
	}
	return nil
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
	if o.apiKey == "" {
		o.apiKey = getenv("OUTPOST_API_KEY")
	}
	if o.apiKey == "" {
		return errors.New("no API key: set --api-key or OUTPOST_API_KEY")
	}
	api := newOutpostAPI(o.api, o.apiKey, o.senders)
	if err := api.health(ctx); err != nil {
		return err
	}
	var logs *logCounter
	if o.logDB != "" {
		if logs, err = openLogCounter(ctx, o.logDB); err != nil {
			return err
		}
		defer logs.close(context.Background())
	}
	run := fmt.Sprintf("b%d", time.Now().Unix())
	fmt.Fprintf(stdout, "outpost-bench %s: outpost %s, %d events a phase, %d senders, delivery concurrency %d, spread by %s, %s UTC\n",
		run, orUnknown(o.outpostCommit), o.events, o.senders, o.concurrency, o.spreadRoute, time.Now().UTC().Format("2006-01-02 15:04"))
	if o.background > 0 {
		if err := printBackground(ctx, o, stdout); err != nil {
			return err
		}
	}
	for _, name := range o.receivers {
		if err := benchReceiver(ctx, api, logs, run, name, o, stdout); err != nil {
			return err
		}
	}
	return nil
}

// benchReceiver runs the warm-up and the phases against one receiver and
// prints each phase's figures.
func benchReceiver(ctx context.Context, api outpostAPI, logs *logCounter, run, name string, o options, stdout io.Writer) error {
	var delay time.Duration
	label := name
	if name == "delay" {
		delay, label = o.receiverDelay, fmt.Sprintf("delay-%dms", o.receiverDelay.Milliseconds())
	}
	recv, err := startReceiver(delay)
	if err != nil {
		return err
	}
	defer recv.close(context.Background())
	p := newPlan(recv, run, name, o.events, o.warmup, o.spreadRoute)
	started := time.Now()
	if err := provision(ctx, api, recv, p, o.provisions); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "receiver %s: %d destinations made in %s\n", label, len(p.destinations), time.Since(started).Round(time.Millisecond))
	if o.warmup > 0 {
		if _, err := measure(ctx, api, recv, p.warmup, o, nil); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	for _, ph := range p.phases {
		f, err := measure(ctx, api, recv, ph, o, logs)
		if err != nil {
			return err
		}
		printFigures(stdout, ph.shape, label, f)
	}
	return nil
}

// printBackground reads the CPU the box and the stack use with no traffic
// over o.background, the floor under each phase's figures.
func printBackground(ctx context.Context, o options, stdout io.Writer) error {
	before, err := readCPU(o.stack)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.background):
	}
	after, err := readCPU(o.stack)
	if err != nil {
		return err
	}
	box, stack := after.since(before)
	perSecond := func(ticks uint64) float64 { return float64(ticks) * 1000 / clockTick / o.background.Seconds() }
	fmt.Fprintf(stdout, "background with no traffic, over %s: box %.0f CPU-ms/s, stack %.0f CPU-ms/s (of %d cores' %d)\n",
		o.background, perSecond(box), perSecond(stack), runtime.NumCPU(), runtime.NumCPU()*1000)
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(commit not given)"
	}
	return s
}
