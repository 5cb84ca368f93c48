package signingkeys

import (
	"context"
	"sync"
	"time"
)

// FreshFor bounds how old the keys a delivery is signed with may be: a
// rotation reaches every delivery signed FreshFor after it. (A key's end
// of overlap needs no refresh: each signature checks it at its moment.)
// Keys older than refreshAfter are reloaded in the background while they
// still sign, so a busy account's deliveries never wait for the database.
const (
	FreshFor     = 5 * time.Second
	refreshAfter = FreshFor / 2
)

// Bounds of the cache.
const (
	cacheSize  = 10000           // accounts kept before the cache starts over
	loadWithin = 5 * time.Second // one load of an account's keys
)

// RingSource reads an account's keys with their private halves (Store).
type RingSource interface {
	Ring(ctx context.Context, accountID int64, now time.Time) (Ring, error)
}

// Cache keeps accounts' rings for FreshFor, so signing a delivery does not
// read the database: a worker reads each busy account's keys about once
// per refreshAfter. Callers that want the same account's keys share one
// load; the last ring read is used when a reload fails.
type Cache struct {
	source RingSource
	now    func() time.Time

	mu      sync.Mutex
	entries map[int64]*cacheEntry
}

type cacheEntry struct {
	ring     Ring
	loaded   bool
	loadedAt time.Time // when its load started: it is at least this fresh
	loading  *ringLoad // non-nil while a load runs
}

// ringLoad is one load in flight; done closes when ring or err is set.
type ringLoad struct {
	done chan struct{}
	ring Ring
	err  error
}

// NewCache returns a cache over source; now defaults to time.Now.
func NewCache(source RingSource, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{source: source, now: now, entries: map[int64]*cacheEntry{}}
}

// Ring returns the account's ring, at most FreshFor old unless the
// database cannot be read (then the last one read, if any). It makes the
// account's first key when it has none.
func (c *Cache) Ring(ctx context.Context, accountID int64) (Ring, error) {
	c.mu.Lock()
	e := c.entries[accountID]
	if e == nil {
		if len(c.entries) >= cacheSize {
			clear(c.entries)
		}
		e = &cacheEntry{}
		c.entries[accountID] = e
	}
	now := c.now()
	age := now.Sub(e.loadedAt)
	if e.loaded && age < refreshAfter {
		r := e.ring
		c.mu.Unlock()
		return r, nil
	}
	load := e.loading
	if load == nil {
		load = &ringLoad{done: make(chan struct{})}
		e.loading = load
		go c.run(ctx, accountID, e, load, now)
	}
	if e.loaded && age < FreshFor {
		r := e.ring // still fresh enough while the reload runs
		c.mu.Unlock()
		return r, nil
	}
	c.mu.Unlock()
	select {
	case <-load.done:
		return load.ring, load.err
	case <-ctx.Done():
		return Ring{}, ctx.Err()
	}
}

// run loads an account's ring, bounded on its own so that a caller that
// gives up does not fail the others waiting for it.
func (c *Cache) run(ctx context.Context, accountID int64, e *cacheEntry, load *ringLoad, startedAt time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadWithin)
	defer cancel()
	load.ring, load.err = c.source.Ring(ctx, accountID, startedAt)
	c.mu.Lock()
	e.loading = nil
	if load.err == nil {
		e.ring, e.loaded, e.loadedAt = load.ring, true, startedAt
	} else if e.loaded {
		load.ring, load.err = e.ring, nil
	}
	c.mu.Unlock()
	close(load.done)
}
