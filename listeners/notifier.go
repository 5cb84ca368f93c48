package listeners

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// notifier wakes this process's waiters when another process (or this
// one) notifies webhook_listeners: one connection of its own LISTENs, from
// the first subscription until ctx ends, and fans each payload out to the
// waiters of that key. Waiters also poll now and then, so a notification
// lost while the connection is re-established costs a little latency, not
// a delivery.
type notifier struct {
	ctx     context.Context
	connect func(context.Context) (*pgx.Conn, error)
	logger  *slog.Logger

	mu      sync.Mutex
	started bool
	waiters map[string]map[chan struct{}]struct{}
}

func newNotifier(ctx context.Context, connect func(context.Context) (*pgx.Conn, error), logger *slog.Logger) *notifier {
	return &notifier{ctx: ctx, connect: connect, logger: logger, waiters: map[string]map[chan struct{}]struct{}{}}
}

// subscribe returns a channel that receives (at most one pending value)
// whenever key is notified, and the function that ends the subscription.
func (n *notifier) subscribe(key string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	n.mu.Lock()
	if !n.started {
		n.started = true
		go n.run()
	}
	if n.waiters[key] == nil {
		n.waiters[key] = map[chan struct{}]struct{}{}
	}
	n.waiters[key][c] = struct{}{}
	n.mu.Unlock()
	return c, func() {
		n.mu.Lock()
		delete(n.waiters[key], c)
		if len(n.waiters[key]) == 0 {
			delete(n.waiters, key)
		}
		n.mu.Unlock()
	}
}

// wake wakes the waiters of key (a lookup: every notification of every
// process reaches every API process); every waiter when key is "".
func (n *notifier) wake(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if key != "" {
		signal(n.waiters[key])
		return
	}
	for _, cs := range n.waiters {
		signal(cs)
	}
}

// signal wakes each of cs that is not awake already.
func signal(cs map[chan struct{}]struct{}) {
	for c := range cs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// run listens until ctx ends, connecting again after a failure.
func (n *notifier) run() {
	backoff := 100 * time.Millisecond
	for n.ctx.Err() == nil {
		started := time.Now()
		err := n.listen()
		if n.ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		n.logger.Warn("listener notifications interrupted; waiters poll until they are back", "error", err.Error(), "retry_in", backoff.String())
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen holds one LISTEN connection until it fails or ctx ends.
func (n *notifier) listen() error {
	conn, err := n.connect(n.ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	if err := dbq.New(conn).ListenForListeners(n.ctx); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Whatever was notified while no connection listened: look again.
	n.wake("")
	for {
		note, err := conn.WaitForNotification(n.ctx)
		if err != nil {
			return fmt.Errorf("wait for notifications: %w", err)
		}
		n.wake(note.Payload)
	}
}
