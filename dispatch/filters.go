package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/eventfilter"
)

// Routing at ingestion (docs/delivery.md): CEL cannot run in PostgreSQL,
// so the committer judges each event against its account's filters before
// the statement that stores it, and tells the statement which deliveries
// they rejected. The filters come from a cache of this process, per
// account, read at a version of the account's routing with whether any of
// its webhooks follows states; the statement stores nothing when a
// version is not the account's latest (a filter, a filtered webhook's
// matching, or a webhook's following of states changed since), and the
// committer reads those accounts again and retries. An account the cache
// does not hold is judged as having no routing (version 0): most never
// have any, cost nothing more than a map lookup, and are stored by the
// statement without routing's steps.

// routingSource reads accounts' routing (*deliveries.Store).
type routingSource interface {
	WebhookRouting(ctx context.Context, accountIDs []int64) ([]deliveries.AccountRouting, error)
}

// maxRoutingAccounts bounds the accounts whose routing a process keeps; one
// dropped is read again at its next event.
const maxRoutingAccounts = 10_000

// routingCache holds the routing of the accounts that have had any: their
// compiled filters and whether they follow states. It is safe for
// concurrent use; an entry never changes once stored.
type routingCache struct {
	logger   *slog.Logger
	compiled *eventfilter.Cache
	mu       sync.RWMutex
	accounts map[int64]*accountRouting
}

// maxCompiledFilters bounds the distinct filter texts a process keeps
// compiled.
const maxCompiledFilters = 10_000

func newRoutingCache(logger *slog.Logger) *routingCache {
	return &routingCache{logger: logger, compiled: eventfilter.NewCache(maxCompiledFilters), accounts: map[int64]*accountRouting{}}
}

// accountRouting is one account's routing at a version: whether its
// events need the statement's routing steps, and its filtered webhooks by
// the jobs they match.
type accountRouting struct {
	version int64
	routed  bool
	allJobs []*webhookFilter
	byJob   map[int64][]*webhookFilter
}

// webhookFilter is one webhook's compiled filter.
type webhookFilter struct {
	webhookID, name string
	eventTypes      []string
	// filter is nil when the stored text does not compile (the API
	// checks it first): such a filter lets every event through.
	filter *eventfilter.Filter
	// warned: its failure was logged (once per process and filter).
	warned atomic.Bool
}

// judge sets each event's RoutingVersion, Routed and the webhooks whose filters
// reject it (Rejected); sources are the same events as the API gave them.
// A filter that fails on an event (eventfilter.ErrEvaluation) lets it
// through: a delivery too many is seen and can be fixed, one missed is
// not.
func (c *routingCache) judge(events []deliveries.NewEvent, sources []webhooks.Event) {
	now := time.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := range events {
		ev := &events[i]
		ev.RoutingVersion, ev.Routed, ev.Rejected = 0, false, nil
		acc := c.accounts[ev.AccountID]
		if acc == nil {
			continue
		}
		ev.RoutingVersion, ev.Routed = acc.version, acc.routed
		var seen *eventfilter.Event
		for _, list := range [2][]*webhookFilter{acc.allJobs, acc.byJob[jobNumber(ev.JobID)]} {
			for _, f := range list {
				if !f.takes(ev.Type) {
					continue
				}
				if seen == nil {
					seen = eventfilter.NewEvent(sources[i], now)
				}
				if !f.passes(seen, ev.ID, c.logger) {
					ev.Rejected = append(ev.Rejected, f.webhookID)
				}
			}
		}
	}
}

// jobNumber is a job id as webhooks name jobs (-1: none can), as
// IngestEvents reads it.
func jobNumber(jobID string) int64 {
	if len(jobID) == 0 || len(jobID) > 18 {
		return -1
	}
	for _, r := range jobID {
		if r < '0' || r > '9' {
			return -1
		}
	}
	n, _ := strconv.ParseInt(jobID, 10, 64)
	return n
}

func (f *webhookFilter) takes(eventType string) bool {
	for _, t := range f.eventTypes {
		if t == eventType {
			return true
		}
	}
	return false
}

func (f *webhookFilter) passes(ev *eventfilter.Event, eventID string, logger *slog.Logger) bool {
	if f.filter == nil {
		return true
	}
	ok, err := f.filter.Match(ev, f.webhookID, f.name)
	if err != nil {
		if f.warned.CompareAndSwap(false, true) {
			logger.Warn("webhook filter failed on an event; it is delivered (logged once per filter)",
				"webhook_id", f.webhookID, "event_id", eventID, "error", err.Error())
		}
		return true
	}
	return ok
}

// reload reads the accounts' routing again.
func (c *routingCache) reload(ctx context.Context, src routingSource, accountIDs []int64) error {
	read, err := src.WebhookRouting(ctx, accountIDs)
	if err != nil {
		return fmt.Errorf("read routing: %w", err)
	}
	for _, a := range read {
		next := c.compile(a)
		c.mu.Lock()
		if len(c.accounts) >= maxRoutingAccounts && c.accounts[a.AccountID] == nil {
			for id := range c.accounts { // any one
				delete(c.accounts, id)
				break
			}
		}
		if cur := c.accounts[a.AccountID]; cur == nil || cur.version <= next.version {
			c.accounts[a.AccountID] = next
		}
		c.mu.Unlock()
	}
	return nil
}

// compile builds an account's entry; each filter's text is compiled once
// per process (eventfilter.Cache), whichever webhooks share it.
func (c *routingCache) compile(a deliveries.AccountRouting) *accountRouting {
	next := &accountRouting{version: a.Version, routed: a.Routed(), byJob: map[int64][]*webhookFilter{}}
	for _, w := range a.Filters {
		f := &webhookFilter{webhookID: w.ID, name: w.Name, eventTypes: w.EventTypes}
		compiled, err := c.compiled.Get(w.Filter)
		if err != nil {
			c.logger.Warn("stored webhook filter does not compile; every event passes it",
				"webhook_id", w.ID, "error", err.Error())
		}
		f.filter = compiled
		if len(w.JobIDs) == 0 {
			next.allJobs = append(next.allJobs, f)
			continue
		}
		for _, j := range uniqueJobs(w.JobIDs) {
			next.byJob[j] = append(next.byJob[j], f)
		}
	}
	return next
}

func uniqueJobs(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	var out []int64
	for _, j := range ids {
		if !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	return out
}
