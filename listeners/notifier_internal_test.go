package listeners

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// idleNotifier is a notifier whose connection never starts: wake is called
// by the test.
func idleNotifier(t *testing.T) *notifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // run returns at once
	return newNotifier(ctx, func(context.Context) (*pgx.Conn, error) { return nil, errors.New("no connection") },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestNotifier_WakesTheKeysWaitersOnly: a notification wakes the waiters
// of its key, not the others; "" (the connection came back) wakes all.
func TestNotifier_WakesTheKeysWaitersOnly(t *testing.T) {
	n := idleNotifier(t)
	a1, endA1 := n.subscribe("l:a")
	a2, endA2 := n.subscribe("l:a")
	b, endB := n.subscribe("l:b")
	defer endB()
	n.wake("l:a")
	for name, c := range map[string]<-chan struct{}{"first of a": a1, "second of a": a2} {
		select {
		case <-c:
		default:
			t.Fatalf("the %s waiter was not woken", name)
		}
	}
	select {
	case <-b:
		t.Fatal("b's waiter was woken by a's notification")
	default:
	}
	endA1()
	endA2()
	n.wake("")
	select {
	case <-b:
	default:
		t.Fatal(`wake("") did not wake b's waiter`)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.waiters["l:a"]; ok {
		t.Fatal("a key without waiters is still kept")
	}
}

// TestNotifier_WakeDoesNotWalkOtherKeys: with many waiters on other keys,
// waking one key costs a lookup, not a walk over every waiter. A walk over
// 200,000 waiters per wake takes seconds for 2,000 wakes; a lookup, well
// under a millisecond.
func TestNotifier_WakeDoesNotWalkOtherKeys(t *testing.T) {
	n := idleNotifier(t)
	for i := range 200_000 {
		_, end := n.subscribe(fmt.Sprintf("a:wla_%d", i))
		defer end()
	}
	c, end := n.subscribe("l:mine")
	defer end()
	started := time.Now()
	for range 2000 {
		n.wake("l:mine")
		<-c
	}
	if took := time.Since(started); took > 200*time.Millisecond {
		t.Fatalf("2,000 wakes of one key among 200,000 waiters took %s; want well under 200ms", took)
	}
}
