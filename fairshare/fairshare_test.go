package fairshare_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/fairshare"
)

// TestPool_ServesWaitingKeysInTurn: key "busy" queues many waiters before
// key "quiet" queues two; as slots free up, quiet is served second and
// fourth, not after all of busy's.
func TestPool_ServesWaitingKeysInTurn(t *testing.T) {
	p := fairshare.New(1, 0)
	ctx := context.Background()
	if err := p.Acquire(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	wait := func(key string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Acquire(ctx, key); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, key)
			mu.Unlock()
			p.Release(key)
		}()
		time.Sleep(10 * time.Millisecond) // queue in this order
	}
	for range 5 {
		wait("busy")
	}
	wait("quiet")
	wait("quiet")
	p.Release("busy")
	wg.Wait()
	want := []string{"busy", "quiet", "busy", "quiet", "busy", "busy", "busy"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
}

// TestPool_BoundsConcurrency: never more than n holders at once.
func TestPool_BoundsConcurrency(t *testing.T) {
	const n = 3
	p := fairshare.New(n, 0)
	var mu sync.Mutex
	held, most := 0, 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{"a", "b", "c", "d"}[i%4]
			if err := p.Acquire(context.Background(), key); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held++
			most = max(most, held)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			held--
			mu.Unlock()
			p.Release(key)
		}()
	}
	wg.Wait()
	if most != n {
		t.Fatalf("at most %d held at once, want %d", most, n)
	}
}

// TestPool_CancelledWaiterLeavesNoSlotBehind: a waiter that gives up does
// not take a slot, and the next waiter still gets one.
func TestPool_CancelledWaiterLeavesNoSlotBehind(t *testing.T) {
	p := fairshare.New(1, 0)
	if err := p.Acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Acquire(ctx, "b"); err == nil {
		t.Fatal("acquired a slot that was held")
	}
	got := make(chan struct{})
	go func() {
		if err := p.Acquire(context.Background(), "c"); err == nil {
			close(got)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	p.Release("a")
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("the released slot never reached the next waiter")
	}
}

// TestPool_KeyAtItsLimitLeavesSlotsToOthers: a key holding its limit
// waits even while slots are free, and another key takes them at once.
func TestPool_KeyAtItsLimitLeavesSlotsToOthers(t *testing.T) {
	p := fairshare.New(4, 2)
	ctx := context.Background()
	for range 2 {
		if err := p.Acquire(ctx, "hung"); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := p.Acquire(short, "hung"); err == nil {
		t.Fatal("a key took more than its limit")
	}
	for range 2 {
		short, cancel := context.WithTimeout(ctx, time.Second)
		if err := p.Acquire(short, "healthy"); err != nil {
			t.Fatalf("another key could not take a free slot: %v", err)
		}
		cancel()
	}
	// When the limited key releases, its own waiter gets the slot back.
	got := make(chan struct{})
	go func() {
		if err := p.Acquire(ctx, "hung"); err == nil {
			close(got)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	p.Release("hung")
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("the released slot never reached the key's waiter")
	}
}
