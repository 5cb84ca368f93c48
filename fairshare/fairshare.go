// Package fairshare shares a fixed number of slots among keys (accounts):
// no key holds more than its limit, and when slots are contended the
// waiting keys are served in turn, so one key with many waiters (or many
// slow holders) cannot starve the others.
package fairshare

import (
	"context"
	"sync"
)

// Pool is a counting semaphore with a per-key limit and a queue per key,
// served round robin.
type Pool struct {
	mu     sync.Mutex
	size   int
	free   int
	perKey int
	held   map[string]int
	queues map[string][]chan struct{}
	ring   []string // keys with waiters, in turn order
}

// New returns a pool of n slots of which one key holds at most perKey
// (perKey <= 0 or > n: n).
func New(n, perKey int) *Pool {
	if perKey <= 0 || perKey > n {
		perKey = n
	}
	return &Pool{size: n, free: n, perKey: perKey, held: map[string]int{}, queues: map[string][]chan struct{}{}}
}

// Size is the number of slots.
func (p *Pool) Size() int { return p.size }

// Acquire takes a slot for key, waiting its turn while none is free to it.
// Each successful Acquire is paired with a Release(key).
func (p *Pool) Acquire(ctx context.Context, key string) error {
	p.mu.Lock()
	if p.free > 0 && p.held[key] < p.perKey && !p.eligibleWaiter() {
		p.free--
		p.held[key]++
		p.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	if len(p.queues[key]) == 0 {
		p.ring = append(p.ring, key)
	}
	p.queues[key] = append(p.queues[key], ready)
	p.dispatch()
	p.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-ready: // handed a slot as the context ended: give it back
			p.release(key)
		default:
			p.remove(key, ready)
		}
		return ctx.Err()
	}
}

// Release returns key's slot; the next key in turn may take it.
func (p *Pool) Release(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release(key)
}

func (p *Pool) release(key string) {
	if p.held[key]--; p.held[key] <= 0 {
		delete(p.held, key)
	}
	p.free++
	p.dispatch()
}

// eligibleWaiter reports whether a waiting key may take a free slot.
func (p *Pool) eligibleWaiter() bool {
	for _, k := range p.ring {
		if p.held[k] < p.perKey {
			return true
		}
	}
	return false
}

// dispatch hands free slots to the first waiters of eligible keys, in
// turn: a key served goes to the back of the ring.
func (p *Pool) dispatch() {
	for p.free > 0 {
		i := -1
		for j, k := range p.ring {
			if p.held[k] < p.perKey {
				i = j
				break
			}
		}
		if i < 0 {
			return
		}
		key := p.ring[i]
		q := p.queues[key]
		ready := q[0]
		p.ring = append(p.ring[:i:i], p.ring[i+1:]...)
		if len(q) == 1 {
			delete(p.queues, key)
		} else {
			p.queues[key] = q[1:]
			p.ring = append(p.ring, key)
		}
		p.free--
		p.held[key]++
		close(ready)
	}
}

// remove drops a waiter that gave up.
func (p *Pool) remove(key string, ready chan struct{}) {
	q := p.queues[key]
	for i, c := range q {
		if c == ready {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		p.queues[key] = q
		return
	}
	delete(p.queues, key)
	for i, k := range p.ring {
		if k == key {
			p.ring = append(p.ring[:i:i], p.ring[i+1:]...)
			break
		}
	}
}
