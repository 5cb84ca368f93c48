package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/propagation"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/deliveries"
)

// IngestResult is what became of one ingested event.
type IngestResult struct {
	EventID string
	// Err is the event's own problem (its account does not exist, or the
	// database refused to store it); nil when the event is stored, now or
	// by an earlier ingestion.
	Err error
	// Duplicate: the event id was already stored; nothing new is delivered.
	Duplicate bool
}

// ingestGroup is one caller's events, waiting for the group commit that
// stores them.
type ingestGroup struct {
	events []deliveries.NewEvent
	// sources are the same events as the API gave them, which filters read.
	sources []webhooks.Event
	results []deliveries.IngestResult
	// refused holds, per event, why the database refused to store it on its
	// own (nil: stored); nil when none was.
	refused []error
	err     error
	done    chan struct{}
	// arrived is when the caller handed the group over.
	arrived time.Time
}

// eventStore stores a group commit's events in one statement, and reads
// the filters they are judged with (*deliveries.Store).
type eventStore interface {
	IngestEvents(ctx context.Context, events []deliveries.NewEvent) ([]deliveries.IngestResult, []deliveries.RoutedWebhook, error)
	routingSource
}

// committer stores events in group commits: one flusher at a time gathers
// the groups waiting (up to maxEvents) and stores them in one statement,
// while the others' statements run. A lone event is stored at once; under
// load, the events that arrive while a statement runs share the next one.
// Under a steady stream (the last gather ended within streamGap of the next
// event), the gatherer waits up to linger after the first event for more to
// share its statement: at a steady rate one event rarely finds another
// waiting, and a statement's fixed cost (its plan's run, index descents,
// the commit's WAL flush) was most of each event's. It stops waiting when
// the stream goes quiet (no event for quietGaps times its mean gap) while
// it holds every group not answered yet: producers that each wait for
// their answer fall silent once all of them are waiting, and need not wait
// out the linger too; while another statement runs, its callers may send
// again once answered, and the gather waits for them.
type committer struct {
	store     eventStore
	routing   *routingCache
	waker     *Waker
	groups    chan *ingestGroup
	maxEvents int
	linger    time.Duration
	// streamGap is how soon after a gather the next event must come for
	// the gatherer to linger (defaultStreamGap): an idle service, whose
	// events come further apart, stores each one at once.
	streamGap time.Duration
	timeout   time.Duration
	observe   func(events int, took time.Duration)

	// gathering is held by the flusher that gathers the next statement's
	// groups, with pace: the others wait for it (or run their statements),
	// so a linger is not emptied by an idle flusher beside it.
	gathering sync.Mutex
	pace      lingerPace
	// outstanding counts the groups handed over and not answered yet.
	outstanding atomic.Int64
}

const defaultStreamGap = 50 * time.Millisecond

// lingerEnough is how many events end a linger early: a statement's fixed
// cost, shared by that many, is a small part of each event's, and a fast
// stream need not wait out the linger.
const lingerEnough = 16

func (c *committer) flushLoop(ctx context.Context) {
	for {
		batch := c.next(ctx)
		if batch == nil {
			return
		}
		c.flush(batch)
	}
}

// next gathers the next statement's groups, one flusher at a time; nil
// once ctx ends.
func (c *committer) next(ctx context.Context) []*ingestGroup {
	c.gathering.Lock()
	defer c.gathering.Unlock()
	var first *ingestGroup
	select {
	case <-ctx.Done():
		return nil
	case first = <-c.groups:
	}
	var until <-chan time.Time // nil: take only what waits
	var quiet time.Duration
	lingered := c.pace.lingers(time.Now(), c.linger, c.streamGap)
	if lingered {
		timer := time.NewTimer(c.linger)
		defer timer.Stop()
		until, quiet = timer.C, c.pace.quiet()
	}
	batch := c.gather(ctx, first, until, quiet)
	c.pace.gathered(time.Now(), lingered, len(batch))
	return batch
}

// A producer that sends its next event only once the last is answered
// would wait out every linger alone: after lingersWasted lingers in a row
// gathered nothing, the committer does not linger for lingerOff. (A
// steady stream wastes some lingers by chance: at 300 events/s, one 5 ms
// linger in five.)
const (
	lingersWasted = 3
	lingerOff     = time.Second
)

// A linger ends once the stream is quiet for quietGaps times its mean gap
// between events, but waits at least minQuiet (a busy box's scheduling
// delay). An open stream at a steady rate is that quiet about one gap in
// twenty (e^-3); senders that wait for their answers are, once all of them
// wait. The mean moves by 1/gapWeight of each gap.
const (
	quietGaps = 3
	minQuiet  = time.Millisecond
	gapWeight = 8
)

// lingerPace is the committer's memory of its last gathers and of the
// stream's pace: whether the next gather may linger, and for how long it
// waits for the next event.
type lingerPace struct {
	last     time.Time
	wasted   int       // lingers in a row that gathered nothing
	offUntil time.Time // no linger before

	lastArrival time.Time
	meanGap     time.Duration // between events of a stream
	gaps        int           // counted in meanGap, up to gapWeight
}

// arrived notes a group handed over at at. A gap past streamGap is an idle
// pause, not the stream's pace, and is not counted.
func (p *lingerPace) arrived(at time.Time, streamGap time.Duration) {
	if gap := at.Sub(p.lastArrival); !p.lastArrival.IsZero() && gap < streamGap {
		if p.gaps < gapWeight {
			p.gaps++ // the mean of the first gaps, then a moving one
		}
		p.meanGap += (max(gap, 0) - p.meanGap) / time.Duration(p.gaps)
	}
	if at.After(p.lastArrival) {
		p.lastArrival = at
	}
}

// quiet is how long after the last event a lingering gather waits for the
// next.
func (p lingerPace) quiet() time.Duration {
	return max(quietGaps*p.meanGap, minQuiet)
}

// lingers says whether an event that comes at now waits up to linger for
// company: only under a steady stream (a gather ended within streamGap)
// and not soon after lingers that gathered nothing.
func (p lingerPace) lingers(now time.Time, linger, streamGap time.Duration) bool {
	return linger > 0 && now.Sub(p.last) < streamGap && !now.Before(p.offUntil)
}

// gathered notes a gather of groups callers' groups that ended at now.
func (p *lingerPace) gathered(now time.Time, lingered bool, groups int) {
	p.last = now
	switch {
	case !lingered:
	case groups > 1:
		p.wasted = 0
	default:
		p.wasted++
		if p.wasted >= lingersWasted {
			p.offUntil, p.wasted = now.Add(lingerOff), 0
		}
	}
}

// gather takes the groups waiting beside first, up to maxEvents, and, while
// until is open and it holds fewer than lingerEnough events, those that
// arrive before it fires; it ends sooner once none came for quiet while it
// held every group not answered yet (quiet 0: it does not).
func (c *committer) gather(ctx context.Context, first *ingestGroup, until <-chan time.Time, quiet time.Duration) []*ingestGroup {
	batch, n := []*ingestGroup{}, 0
	take := func(g *ingestGroup) {
		c.pace.arrived(g.arrived, c.streamGap)
		batch, n = append(batch, g), n+len(g.events)
	}
	take(first)
	var hush *time.Timer
	defer func() {
		if hush != nil {
			hush.Stop()
		}
	}()
	for n < c.maxEvents {
		select {
		case g := <-c.groups:
			take(g)
			continue
		default:
		}
		if until == nil || n >= lingerEnough {
			break
		}
		var hushed <-chan time.Time
		if quiet > 0 {
			wait := quiet - time.Since(c.pace.lastArrival)
			if wait <= 0 {
				if int64(len(batch)) >= c.outstanding.Load() {
					break // quiet, and no one else's answer is coming
				}
				wait = quiet // look again once more may have been answered
			}
			if hush == nil {
				hush = time.NewTimer(wait)
			} else {
				hush.Reset(wait)
			}
			hushed = hush.C
		}
		select {
		case g := <-c.groups:
			take(g)
		case <-until:
			return batch
		case <-hushed:
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// flush stores the batch's events and answers each group.
func (c *committer) flush(batch []*ingestGroup) {
	parts := make([]groupPart, len(batch))
	for i, g := range batch {
		g.results = make([]deliveries.IngestResult, len(g.events))
		parts[i] = groupPart{g: g, from: 0, to: len(g.events)}
	}
	c.commit(parts)
	for _, g := range batch {
		close(g.done)
	}
	c.outstanding.Add(-int64(len(batch)))
}

// groupPart is some of one group's events: g.events[from:to].
type groupPart struct {
	g        *ingestGroup
	from, to int
}

// commit stores the parts' events in one statement. When the database
// refuses the statement for something other than an outage (a data
// exception in one event, say), it stores each half of the parts on its
// own: first whole callers' groups, then, in a group alone, its events,
// down to the events that fail alone, which are refused one by one. So one
// caller's bad event never fails another caller's. An outage fails every
// part not stored yet: it is returned, and no more statements are tried.
// (An outage while a group is split may leave some of its events stored;
// sent again, they are duplicates when the caller gives event ids.)
func (c *committer) commit(parts []groupPart) error {
	var events []deliveries.NewEvent
	var sources []webhooks.Event
	for _, p := range parts {
		events = append(events, p.g.events[p.from:p.to]...)
		sources = append(sources, p.g.sources[p.from:p.to]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	started := time.Now()
	results, routed, err := c.ingest(ctx, events, sources)
	cancel()
	if err == nil {
		if c.observe != nil {
			c.observe(len(events), time.Since(started))
		}
		c.waker.Wake(routed)
		for _, p := range parts {
			n := copy(p.g.results[p.from:p.to], results)
			results = results[n:]
		}
		return nil
	}
	if outage(err) {
		for _, p := range parts {
			p.g.err = err
		}
		return err
	}
	var left, right []groupPart
	switch p := parts[0]; {
	case len(parts) > 1:
		left, right = parts[:len(parts)/2], parts[len(parts)/2:]
	case p.to-p.from > 1:
		mid := p.from + (p.to-p.from)/2
		left, right = []groupPart{{p.g, p.from, mid}}, []groupPart{{p.g, mid, p.to}}
	default:
		if p.g.refused == nil {
			p.g.refused = make([]error, len(p.g.events))
		}
		p.g.refused[p.from] = refusedEvent(p.g.events[p.from].ID, err)
		return nil
	}
	if err := c.commit(left); err != nil {
		for _, p := range right {
			p.g.err = err
		}
		return err
	}
	return c.commit(right)
}

// maxRoutingReads bounds how many times one statement is retried after its
// accounts' routing was read again.
const maxRoutingReads = 3

// errRoutingChanging: an account's routing changed between every read and
// the statement; the caller should try again.
var errRoutingChanging = errors.New("routing kept changing during ingestion")

// ingest judges the events by their accounts' routing and stores them in
// one statement; when the statement finds routing that changed since it
// was read, it reads those accounts' again and retries.
func (c *committer) ingest(ctx context.Context, events []deliveries.NewEvent, sources []webhooks.Event) ([]deliveries.IngestResult, []deliveries.RoutedWebhook, error) {
	for reads := 0; ; reads++ {
		c.routing.judge(events, sources)
		results, routed, err := c.store.IngestEvents(ctx, events)
		var stale *deliveries.StaleRoutingError
		if !errors.As(err, &stale) {
			return results, routed, err
		}
		if reads == maxRoutingReads {
			return nil, nil, errRoutingChanging
		}
		if err := c.routing.reload(ctx, c.store, stale.Accounts); err != nil {
			return nil, nil, err
		}
	}
}

// outage reports whether a failed statement says nothing about its events:
// the database could not serve it (db.Unavailable: down, refusing, out of
// connections, or no answer in time), it ran out of its time on the server
// (the ingestion's statement_timeout or lock_timeout), or it was cancelled.
// Anything else may be the fault of one event, and its group commit is
// split to find it.
func outage(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "57014" || pgErr.Code == "55P03") { // query_canceled, lock_not_available
		return true
	}
	return db.Unavailable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, errRoutingChanging)
}

// refusedEvent is the answer for an event whose statement failed, with
// nothing but this event in it, for something other than an outage.
func refusedEvent(eventID string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "22"): // data exception: a value of its own
			return webhooks.Errorf(webhooks.EINVALID, "The event holds a value that cannot be stored; its strings must be valid UTF-8 text without NUL characters.")
		case strings.HasPrefix(pgErr.Code, "40"): // transaction rollback (serialization failure, deadlock): it may pass again
			return unavailable(fmt.Errorf("store event %s: %w", eventID, err))
		}
	}
	// Neither the event's fault nor an outage: a defect, an internal error.
	return fmt.Errorf("store event %s: %w", eventID, err)
}

// submit stores events (in a group commit) and returns once they are
// durable, or the context ends: a result per event and, when the database
// refused some on their own, why (nil for the others); an error when none
// may be stored.
func (c *committer) submit(ctx context.Context, events []deliveries.NewEvent, sources []webhooks.Event) ([]deliveries.IngestResult, []error, error) {
	g := &ingestGroup{events: events, sources: sources, done: make(chan struct{}), arrived: time.Now()}
	c.outstanding.Add(1)
	select {
	case c.groups <- g:
	case <-ctx.Done():
		c.outstanding.Add(-1)
		return nil, nil, ctx.Err()
	}
	select {
	case <-g.done:
		if g.err != nil {
			return nil, nil, g.err
		}
		return g.results, g.refused, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// Ingest makes events durable and hands their deliveries to the workflows
// that take them (each webhook's shard, or its own lane). It returns once
// every event is stored with a delivery claimed for each matching webhook
// (in PostgreSQL, from where those Temporal workflows take them; the
// sweeper wakes any whose wake-up is lost), with a result per event in
// order. An error means none may be
// stored: the caller should try again.
func (s *Service) Ingest(ctx context.Context, events []webhooks.Event) ([]IngestResult, error) {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	traceParent := carrier.Get("traceparent")
	rows := eventRows(events, s.opts.ToolName, traceParent)
	stored, refused, err := s.committer.submit(ctx, rows, events)
	if err != nil {
		return nil, unavailable(fmt.Errorf("store %d events: %w", len(events), err))
	}
	out := make([]IngestResult, len(events))
	seen := make(map[string]bool, len(events))
	for i, r := range stored {
		if refused != nil && refused[i] != nil {
			out[i] = IngestResult{EventID: events[i].ID, Err: refused[i]}
			continue
		}
		// A repeat within one call is a duplicate of its first occurrence.
		out[i] = IngestResult{EventID: events[i].ID, Duplicate: r.AccountKnown && (!r.Stored || seen[events[i].ID])}
		seen[events[i].ID] = true
		if !r.AccountKnown {
			out[i].Err = webhooks.FieldErrorf("accountId", "Account %d does not exist.", events[i].AccountID)
		}
	}
	return out, nil
}

// eventRows are the events as IngestEvents stores them.
func eventRows(events []webhooks.Event, toolName, traceParent string) []deliveries.NewEvent {
	rows := make([]deliveries.NewEvent, len(events))
	for i, ev := range events {
		rows[i] = deliveries.NewEvent{ID: ev.ID, AccountID: ev.AccountID, Type: ev.Type, JobID: ev.Data.JobID,
			RunID: ev.Data.RunID, Data: ev.Data, ToolName: toolName, TraceParent: traceParent,
			OutcomeAt: deliveries.OutcomeTime(ev.Type, ev.Data)}
	}
	return rows
}
