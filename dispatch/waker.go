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

// LaneOptions shape every lane the waker starts.
type LaneOptions struct {
	PageSize       int
	MaxInFlight    int
	AttemptTimeout time.Duration
	IdleTimeout    time.Duration
	Linger         time.Duration
}

// Waker wakes webhooks' lanes: it signals each lane workflow, starting it
// when it is not running (signal-with-start). Wake is asynchronous and
// coalesces: a lane gets at most one signal in flight, plus one more if
// woken again meanwhile, so a busy lane costs a signal per round, not per
// event. A wake-up that cannot reach Temporal is not lost: the deliveries
// are stored, and the sweeper (WakeOverdueLanes) wakes their lane.
type Waker struct {
	temporal  client.Client
	namespace string
	taskQueue string
	lane      LaneOptions
	logger    *slog.Logger

	mu       sync.Mutex
	inFlight map[string]*laneWake
	wg       sync.WaitGroup
}

type laneWake struct{ again bool }

// NewWaker returns a waker starting lanes on taskQueue.
func NewWaker(tc client.Client, namespace, taskQueue string, lane LaneOptions, logger *slog.Logger) *Waker {
	return &Waker{temporal: tc, namespace: namespace, taskQueue: taskQueue, lane: lane, logger: logger, inFlight: map[string]*laneWake{}}
}

// Wake wakes lanes in the background.
func (w *Waker) Wake(lanes []deliveries.Lane) {
	for _, l := range lanes {
		w.mu.Lock()
		if st, ok := w.inFlight[l.SubscriptionID]; ok {
			st.again = true
			w.mu.Unlock()
			continue
		}
		w.inFlight[l.SubscriptionID] = &laneWake{}
		w.mu.Unlock()
		w.wg.Add(1)
		go w.wakeLoop(l)
	}
}

// wakeRetries bounds a background wake-up's tries; the sweeper covers the
// rest.
const wakeRetries = 5

// wakeSpacing is the least time between two wake-ups of one lane: a lane
// woken again meanwhile gets its signal then. Under load a lane is busy
// taking deliveries from the database anyway; each signal is a write in
// Temporal.
const wakeSpacing = 20 * time.Millisecond

func (w *Waker) wakeLoop(l deliveries.Lane) {
	defer w.wg.Done()
	for first := true; ; first = false {
		if !first {
			time.Sleep(wakeSpacing)
		}
		var err error
		for try := range wakeRetries {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = w.signal(ctx, l)
			cancel()
			if err == nil {
				break
			}
			time.Sleep(time.Duration(100<<try) * time.Millisecond)
		}
		if err != nil {
			w.logger.Warn("cannot wake a webhook's lane; the sweeper will", "subscription_id", l.SubscriptionID, "error", err.Error())
		}
		w.mu.Lock()
		st := w.inFlight[l.SubscriptionID]
		if !st.again {
			delete(w.inFlight, l.SubscriptionID)
			w.mu.Unlock()
			return
		}
		st.again = false
		w.mu.Unlock()
	}
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

// WakeNow wakes lanes and returns once each was signalled.
func (w *Waker) WakeNow(ctx context.Context, lanes []deliveries.Lane) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, l := range lanes {
		g.Go(func() error { return w.signal(gctx, l) })
	}
	return g.Wait()
}

// signal signals the lane, starting it if it is not running. The account
// is the fairness key of the lane's tasks: where tasks queue in Temporal's
// matching service, accounts take turns.
func (w *Waker) signal(ctx context.Context, l deliveries.Lane) error {
	id := workflows.LaneWorkflowID(l.SubscriptionID)
	opts := client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             w.taskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAccountID.ValueSet(l.AccountID),
			workflows.SearchWebhookID.ValueSet(l.SubscriptionID),
		),
		Priority: temporal.Priority{FairnessKey: strconv.FormatInt(l.AccountID, 10)},
	}
	in := workflows.LaneInput{
		SubscriptionID: l.SubscriptionID, AccountID: l.AccountID, PageSize: w.lane.PageSize,
		MaxInFlight: w.lane.MaxInFlight, AttemptTimeout: w.lane.AttemptTimeout, IdleTimeout: w.lane.IdleTimeout,
		Linger: w.lane.Linger,
	}
	err := withSearchAttributes(ctx, w.temporal, w.namespace, func() error {
		_, err := w.temporal.SignalWithStartWorkflow(ctx, id, workflows.WakeSignal, nil, opts, workflows.LaneWorkflowName, in)
		return err
	})
	if err != nil {
		return fmt.Errorf("wake lane %s: %w", id, err)
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
