package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// IngestResult is what became of one ingested event.
type IngestResult struct {
	EventID string
	// Err is the event's own problem (its account does not exist); nil
	// when the event is stored, now or by an earlier ingestion.
	Err error
	// Duplicate: the event id was already stored; nothing new is delivered.
	Duplicate bool
}

// ingestGroup is one caller's events, waiting for the group commit that
// stores them.
type ingestGroup struct {
	events  []deliveries.NewEvent
	results []deliveries.IngestResult
	err     error
	done    chan struct{}
}

// committer stores events in group commits: each flusher takes every group
// waiting when it is free (up to maxEvents) and stores them in one
// statement. A lone event is stored at once; under load, the events that
// arrive while a statement runs share the next one.
type committer struct {
	store     *deliveries.Store
	waker     *Waker
	groups    chan *ingestGroup
	maxEvents int
	timeout   time.Duration
	observe   func(events int, took time.Duration)
}

func (c *committer) flushLoop(ctx context.Context) {
	for {
		var first *ingestGroup
		select {
		case <-ctx.Done():
			return
		case first = <-c.groups:
		}
		batch, n := []*ingestGroup{first}, len(first.events)
	gather:
		for n < c.maxEvents {
			select {
			case g := <-c.groups:
				batch, n = append(batch, g), n+len(g.events)
			default:
				break gather
			}
		}
		c.flush(batch, n)
	}
}

func (c *committer) flush(batch []*ingestGroup, n int) {
	events := make([]deliveries.NewEvent, 0, n)
	for _, g := range batch {
		events = append(events, g.events...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	started := time.Now()
	results, lanes, err := c.store.IngestEvents(ctx, events)
	cancel()
	if c.observe != nil && err == nil {
		c.observe(len(events), time.Since(started))
	}
	if err == nil {
		c.waker.Wake(lanes)
	}
	for _, g := range batch {
		g.err = err
		if err == nil {
			g.results, results = results[:len(g.events)], results[len(g.events):]
		}
		close(g.done)
	}
}

// submit stores events (in a group commit) and returns once they are
// durable, or the context ends.
func (c *committer) submit(ctx context.Context, events []deliveries.NewEvent) ([]deliveries.IngestResult, error) {
	g := &ingestGroup{events: events, done: make(chan struct{})}
	select {
	case c.groups <- g:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-g.done:
		return g.results, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Ingest makes events durable and hands their deliveries to their
// webhooks' lanes. It returns once every event is stored with a delivery
// claimed for each matching webhook (in PostgreSQL, from where the lanes,
// Temporal workflows, take them; the sweeper wakes any lane whose wake-up
// is lost), with a result per event in order. An error means none may be
// stored: the caller should try again.
func (s *Service) Ingest(ctx context.Context, events []webhooks.Event) ([]IngestResult, error) {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	traceParent := carrier.Get("traceparent")
	rows := make([]deliveries.NewEvent, len(events))
	for i, ev := range events {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return nil, fmt.Errorf("encode event %s: %w", ev.ID, err)
		}
		rows[i] = deliveries.NewEvent{ID: ev.ID, AccountID: ev.AccountID, Type: ev.Type, JobID: ev.Data.JobID,
			RunID: ev.Data.RunID, Data: data, ToolName: s.opts.ToolName, TraceParent: traceParent}
	}
	stored, err := s.committer.submit(ctx, rows)
	if err != nil {
		return nil, unavailable(fmt.Errorf("store %d events: %w", len(events), err))
	}
	out := make([]IngestResult, len(events))
	seen := make(map[string]bool, len(events))
	for i, r := range stored {
		// A repeat within one call is a duplicate of its first occurrence.
		out[i] = IngestResult{EventID: events[i].ID, Duplicate: r.AccountKnown && (!r.Stored || seen[events[i].ID])}
		seen[events[i].ID] = true
		if !r.AccountKnown {
			out[i].Err = webhooks.FieldErrorf("accountId", "Account %d does not exist.", events[i].AccountID)
		}
	}
	return out, nil
}
