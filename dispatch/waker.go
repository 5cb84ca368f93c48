package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// Waker wakes the workflows that take webhooks' deliveries: a webhook on
// the shared route wakes its shard ({task queue}/shard-{n}-of-{N}), one on its own
// route its lane (webhook/{id}); a paused one wakes nobody. Each is
// signalled, and started when it is not running (signal-with-start). Wake
// is asynchronous and coalesces per workflow: at most one signal in
// flight, plus one more if woken again meanwhile, so a busy shard costs a
// signal per round, not per event. A wake-up that cannot reach Temporal is
// not lost: the deliveries are stored, and the sweeper (WakeOverdueWebhooks)
// wakes their workflow.
type Waker struct {
	temporal  client.Client
	namespace string
	taskQueue string
	shards    int
	logger    *slog.Logger

	// promises, when set, are the steady shards' promises to claim: a
	// shard covered by one is not woken (FollowClaimPromises).
	promises *claimPromises
	// roundsBegun, when set, reads how many rounds a shard has begun
	// (FollowRoundStarts).
	roundsBegun func(ctx context.Context, shard int) (int64, error)

	mu       sync.Mutex
	inFlight map[string]*wakeState
	// signalled is, by shard workflow, the count of rounds begun read just
	// before its last accepted signal, and when that signal was sent.
	signalled map[string]signalledShard
	wg        sync.WaitGroup
}

type signalledShard struct {
	roundsBegun int64
	at          time.Time
}

type wakeState struct{ again bool }

// NewWaker returns a waker starting workflows on taskQueue, for a service
// of shards shards (DELIVERY_SHARDS: the same in every process).
func NewWaker(tc client.Client, namespace, taskQueue string, shards int, logger *slog.Logger) *Waker {
	return &Waker{temporal: tc, namespace: namespace, taskQueue: taskQueue, shards: max(shards, 1), logger: logger,
		inFlight: map[string]*wakeState{}, signalled: map[string]signalledShard{}}
}

// wakeTarget is one workflow to wake.
type wakeTarget struct {
	id    string
	owner deliveries.RoutedWebhook // for an own lane: its webhook
	shard int                      // for a shard
	own   bool
}

// targets are the workflows that take the webhooks' deliveries, once each.
func (w *Waker) targets(webhooks []deliveries.RoutedWebhook) []wakeTarget {
	seen := map[string]bool{}
	var out []wakeTarget
	for _, l := range webhooks {
		var t wakeTarget
		switch l.Route {
		case deliveries.RoutePaused, deliveries.RouteHeld:
			continue // nobody takes them until resumed, or until the probe (the lane's timer)
		case deliveries.RouteOwn:
			t = wakeTarget{id: workflows.LaneWorkflowID(l.SubscriptionID), owner: l, own: true}
		default:
			n := deliveries.ShardOf(l.LaneKey, w.shards)
			t = wakeTarget{id: workflows.ShardWorkflowID(w.taskQueue, n, w.shards), shard: n}
		}
		if !seen[t.id] {
			seen[t.id] = true
			out = append(out, t)
		}
	}
	return out
}

// FollowClaimPromises makes Wake leave alone the shards whose rounds have
// promised to claim what is committed now (read, as
// deliveries.Store.ShardClaimPromises for the waker's number of shards):
// under steady traffic a shard's rounds follow each other and read the
// database as they go, and a wake-up is a signal in Temporal. Call it
// before the first Wake.
func (w *Waker) FollowClaimPromises(read func(ctx context.Context, shards int) (map[int]time.Duration, error)) {
	w.promises = newClaimPromises(func(ctx context.Context) (map[int]time.Duration, error) { return read(ctx, w.shards) })
}

// FollowRoundStarts makes Wake signal a shard once a round rather than
// once a commit: a signal Temporal accepted is followed by a round of the
// shard that begins after it, and a round counts itself begun before its
// first claim (deliveries.Store.BeginShardRound). So while the count read
// after a commit (read, as deliveries.Store.ShardRoundsBegun) is still
// the one read just before the shard's last signal, the round that signal
// brings has not begun and will claim that commit: the wake-up needs no
// signal of its own. Without it, the rounds' first third of a second
// (before their promise to claim is made and read) drew a signal every
// wakeSpacing, about five a round, each a write of the shard's state in
// Temporal. A read that fails, or a signal older than signalledFor, gives
// a signal as before. Call it before the first Wake.
func (w *Waker) FollowRoundStarts(read func(ctx context.Context, shard, shards int) (int64, error)) {
	w.roundsBegun = func(ctx context.Context, shard int) (int64, error) { return read(ctx, shard, w.shards) }
}

// signalledFor bounds how long a signal stands for the wake-ups after it:
// a round normally begins well within it (a signal that reached a round
// in progress waits for that round's end); past it the shard is signalled
// again, in case its workflow ended without a round after the signal.
const signalledFor = 5 * time.Second

// roundReadTimeout bounds the read of a shard's rounds begun; past it the
// wake-up signals.
const roundReadTimeout = time.Second

// awaitsItsRound says whether t is a shard signalled since its last round
// began, read now (after the commits this wake-up is for): the round that
// signal brings claims them. Otherwise it returns the count read (known
// false when unread), for the signal's record.
func (w *Waker) awaitsItsRound(t wakeTarget) (waits bool, begun int64, known bool) {
	if t.own || w.roundsBegun == nil {
		return false, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), roundReadTimeout)
	defer cancel()
	begun, err := w.roundsBegun(ctx, t.shard)
	if err != nil {
		return false, 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.signalled[t.id]
	return ok && last.roundsBegun == begun && time.Since(last.at) < signalledFor, begun, true
}

// signalledAfter records that t was signalled, begun rounds read before
// the signal (known), or forgets it when unread.
func (w *Waker) signalledAfter(t wakeTarget, at time.Time, begun int64, known bool) {
	if t.own {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if known {
		w.signalled[t.id] = signalledShard{roundsBegun: begun, at: at}
	} else {
		delete(w.signalled, t.id)
	}
}

// covered says whether t is a shard whose round has promised to claim what
// was committed before now.
func (w *Waker) covered(t wakeTarget) bool {
	return !t.own && w.promises != nil && w.promises.covers(t.shard)
}

// Wake wakes the workflows that take the webhooks' deliveries in the
// background; it is called once they are committed.
func (w *Waker) Wake(webhooks []deliveries.RoutedWebhook) {
	for _, t := range w.targets(webhooks) {
		if w.covered(t) {
			continue
		}
		w.mu.Lock()
		if st, ok := w.inFlight[t.id]; ok {
			st.again = true
			w.mu.Unlock()
			continue
		}
		w.inFlight[t.id] = &wakeState{}
		w.mu.Unlock()
		w.wg.Add(1)
		go w.wakeLoop(t)
	}
}

// StartShards starts every shard that is not running (a worker does at
// start, so that operators' Updates find them).
func (w *Waker) StartShards(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for n := range w.shards {
		g.Go(func() error {
			return w.signal(gctx, wakeTarget{id: workflows.ShardWorkflowID(w.taskQueue, n, w.shards), shard: n})
		})
	}
	return g.Wait()
}

// wakeRetries bounds a background wake-up's tries; the sweeper covers the
// rest.
const wakeRetries = 5

// wakeSpacing is the least time between two wake-ups of one workflow: one
// woken again meanwhile gets its signal then. Under load a shard or lane
// is busy taking deliveries from the database anyway; each signal is a
// write in Temporal.
const wakeSpacing = 20 * time.Millisecond

func (w *Waker) wakeLoop(t wakeTarget) {
	defer w.wg.Done()
	for first := true; ; first = false {
		if !first {
			time.Sleep(wakeSpacing)
		}
		if !first && w.covered(t) {
			// Woken again meanwhile, and its round has promised since to
			// claim what that wake-up was for.
			if w.lastWake(t) {
				return
			}
			continue
		}
		waits, begun, known := w.awaitsItsRound(t)
		if waits {
			// Signalled already, and no round has begun since: the next
			// claims what this wake-up is for.
			if w.lastWake(t) {
				return
			}
			continue
		}
		sent := time.Now()
		var err error
		for try := range wakeRetries {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = w.signal(ctx, t)
			cancel()
			if err == nil {
				break
			}
			time.Sleep(time.Duration(100<<try) * time.Millisecond)
		}
		if err != nil {
			w.logger.Warn("cannot wake a delivery workflow; the sweeper will", "workflow_id", t.id, "error", err.Error())
		}
		w.signalledAfter(t, sent, begun, known && err == nil)
		if w.lastWake(t) {
			return
		}
	}
}

// lastWake ends t's wake-ups unless it was woken again meanwhile (then it
// takes that wake-up and says false).
func (w *Waker) lastWake(t wakeTarget) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.inFlight[t.id]
	if !st.again {
		delete(w.inFlight, t.id)
		return true
	}
	st.again = false
	return false
}

// Wait waits for the background wake-ups in flight (shutdown), at most
// until ctx ends: a wake-up given up is not lost (the sweeper).
func (w *Waker) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// WakeNow wakes the workflows that take the webhooks' deliveries and
// returns once each was signalled.
func (w *Waker) WakeNow(ctx context.Context, webhooks []deliveries.RoutedWebhook) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, t := range w.targets(webhooks) {
		g.Go(func() error { return w.signal(gctx, t) })
	}
	return g.Wait()
}

// signal signals the workflow, starting it if it is not running. A lane's
// tasks carry its account as fairness key, a shard's its number: where
// tasks queue in Temporal's matching service, they take turns.
func (w *Waker) signal(ctx context.Context, t wakeTarget) error {
	opts := client.StartWorkflowOptions{
		ID:                    t.id,
		TaskQueue:             w.taskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}
	var (
		workflowType string
		input        any
	)
	if t.own {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			workflows.SearchAccountID.ValueSet(t.owner.AccountID),
			workflows.SearchWebhookID.ValueSet(t.owner.SubscriptionID),
		)
		opts.Priority = temporal.Priority{FairnessKey: strconv.FormatInt(t.owner.AccountID, 10)}
		workflowType, input = workflows.LaneWorkflowName, workflows.LaneInput{SubscriptionID: t.owner.SubscriptionID, AccountID: t.owner.AccountID}
	} else {
		// Fairness keys are scoped to the task queue, and short (Temporal
		// refuses long ones).
		opts.Priority = temporal.Priority{FairnessKey: "shard-" + strconv.Itoa(t.shard)}
		workflowType, input = workflows.ShardWorkflowName, workflows.ShardInput{Shard: t.shard, Shards: w.shards}
	}
	err := withSearchAttributes(ctx, w.temporal, w.namespace, func() error {
		_, err := w.temporal.SignalWithStartWorkflow(ctx, t.id, workflows.WakeSignal, nil, opts, workflowType, input)
		return err
	})
	if err != nil {
		return fmt.Errorf("wake %s: %w", t.id, err)
	}
	return nil
}

// searchAttributesPropagation bounds how long a start retries after the
// search attributes were registered: Temporal's services learn of them at
// their next namespace cache refresh (system.namespaceCacheRefreshInterval,
// 2s by default).
const searchAttributesPropagation = 10 * time.Second

// withSearchAttributes runs start; on a cluster that does not know the
// search attributes yet (API up before any worker) it registers them and
// runs start again until the frontend has refreshed its namespace cache.
func withSearchAttributes(ctx context.Context, tc client.Client, namespace string, start func() error) error {
	err := start()
	if err == nil || !missingSearchAttributeError(err) {
		return err
	}
	if err := EnsureSearchAttributes(ctx, tc, namespace); err != nil {
		return err
	}
	deadline := time.Now().Add(searchAttributesPropagation)
	for {
		err = start()
		if err == nil || !missingSearchAttributeError(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
