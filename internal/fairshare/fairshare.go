// Package fairshare shares a fixed number of slots among keys (accounts):
// while slots are free anyone takes one; when they are contended, waiting
// keys are served in turn, so one key with many waiters cannot starve the
// others.
package fairshare

import (
	"context"
	"sync"
)

// Pool is a counting semaphore with a queue per key, served round robin.
type Pool struct {
	mu     sync.Mutex
	free   int
	queues map[string][]chan struct{}
	ring   []string // keys with waiters, in turn order
}

// New returns a pool of n slots.
func New(n int) *Pool {
	return &Pool{free: n, queues: map[string][]chan struct{}{}}
}

// Acquire takes a slot for key, waiting its turn while none is free.
func (p *Pool) Acquire(ctx context.Context, key string) error {
	p.mu.Lock()
	if p.free > 0 && len(p.ring) == 0 {
		p.free--
		p.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	if len(p.queues[key]) == 0 {
		p.ring = append(p.ring, key)
	}
	p.queues[key] = append(p.queues[key], ready)
	p.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-ready: // handed a slot as the context ended: give it on
			p.handOn()
		default:
			p.remove(key, ready)
		}
		return ctx.Err()
	}
}

// Release returns a slot: to the next key in turn if any waits.
func (p *Pool) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handOn()
}

// handOn gives one slot to the first waiter of the key whose turn it is,
// or back to the pool. p.mu is held.
func (p *Pool) handOn() {
	if len(p.ring) == 0 {
		p.free++
		return
	}
	key := p.ring[0]
	q := p.queues[key]
	ready := q[0]
	if len(q) == 1 {
		delete(p.queues, key)
		p.ring = p.ring[1:]
	} else {
		p.queues[key] = q[1:]
		p.ring = append(p.ring[1:], key) // its next waiter goes to the back
	}
	close(ready)
}

// remove drops a waiter that gave up. p.mu is held.
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
