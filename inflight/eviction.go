package inflight

import "time"

// Keys are kept in a list ordered by last use, so eviction costs a few
// steps per call instead of a sweep of 100,000 keys under the lock.

// evictPerCall bounds the work one call spends on eviction; each call adds
// at most two keys, so eviction keeps up.
const evictPerCall = 4

// entry returns key's entry in m, making it (and counting it against
// MaxKeys) when missing, and marks it used now.
func (l *Limits) entry(m map[string]*entry, key string, destination bool, now time.Time) *entry {
	e := m[key]
	if e == nil {
		e = &entry{limit: newLimit(float64(l.initial(destination))), key: key, destination: destination}
		m[key] = e
		l.pushFront(e)
	}
	l.touch(e, now)
	return e
}

// evict removes up to evictPerCall least recently used keys that have
// nothing in flight and were idle for IdleTTL (or that exceed MaxKeys).
func (l *Limits) evict(now time.Time) {
	for range evictPerCall {
		e := l.lru.prev
		if e == &l.lru {
			return
		}
		over := len(l.webhooks)+len(l.destinations) >= l.opts.MaxKeys
		if !over && now.Sub(e.lastUsed) < l.opts.IdleTTL {
			return
		}
		if e.inFlight > 0 {
			// An attempt longer than IdleTTL: it is in use, not idle.
			l.touch(e, now)
			continue
		}
		l.unlink(e)
		if e.destination {
			delete(l.destinations, e.key)
		} else {
			delete(l.webhooks, e.key)
		}
	}
}

func (l *Limits) touch(e *entry, now time.Time) {
	if now.After(e.lastUsed) {
		e.lastUsed = now
	}
	if l.lru.next != e {
		l.unlink(e)
		l.pushFront(e)
	}
}

func (l *Limits) pushFront(e *entry) {
	e.prev, e.next = &l.lru, l.lru.next
	l.lru.next.prev = e
	l.lru.next = e
}

func (l *Limits) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
