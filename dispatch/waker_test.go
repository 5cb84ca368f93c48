package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/workflows"
)

// fakeTemporal counts signal-with-starts per workflow id; each blocks until
// release is closed, and fails while failing is set.
type fakeTemporal struct {
	client.Client
	mu      sync.Mutex
	signals map[string]int
	release chan struct{}
	failing bool
}

func (f *fakeTemporal) SignalWithStartWorkflow(_ context.Context, id, signal string, _ any, opts client.StartWorkflowOptions, workflow any, _ ...any) (client.WorkflowRun, error) {
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	if signal != workflows.WakeSignal || (workflow != workflows.LaneWorkflowName && workflow != workflows.ShardWorkflowName) ||
		opts.ID != id || opts.Priority.FairnessKey == "" || len(opts.Priority.FairnessKey) > 64 {
		return nil, errors.New("not a wake-up")
	}
	f.signals[id]++
	if f.failing {
		return nil, errors.New("temporal unavailable")
	}
	return nil, nil
}

func (f *fakeTemporal) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.signals[id]
}

// TestWaker_CoalescesWakeUpsOfALane: many wake-ups of one lane while its
// signal is in flight give one more signal, not one each; another lane is
// signalled on its own.
func TestWaker_CoalescesWakeUpsOfALane(t *testing.T) {
	f := &fakeTemporal{signals: map[string]int{}, release: make(chan struct{})}
	w := dispatch.NewWaker(f, "default", "webhooks", 8, slog.New(slog.DiscardHandler))
	busy := deliveries.RoutedWebhook{SubscriptionID: "wsu_busy", AccountID: 1, Route: deliveries.RouteOwn}
	for range 100 {
		w.Wake([]deliveries.RoutedWebhook{busy})
	}
	w.Wake([]deliveries.RoutedWebhook{{SubscriptionID: "wsu_other", AccountID: 2, Route: deliveries.RouteOwn}})
	close(f.release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.Wait(ctx)
	if got := f.count(workflows.LaneWorkflowID("wsu_busy")); got != 2 {
		t.Errorf("busy lane got %d signals for 100 wake-ups while one was in flight, want 2", got)
	}
	if got := f.count(workflows.LaneWorkflowID("wsu_other")); got != 1 {
		t.Errorf("other lane got %d signals, want 1", got)
	}
}

// TestWaker_WakeNowReportsFailures: the sweeper's synchronous wake-up says
// when Temporal refused it.
func TestWaker_WakeNowReportsFailures(t *testing.T) {
	f := &fakeTemporal{signals: map[string]int{}, release: make(chan struct{}), failing: true}
	close(f.release)
	w := dispatch.NewWaker(f, "default", "webhooks", 8, slog.New(slog.DiscardHandler))
	if err := w.WakeNow(context.Background(), []deliveries.RoutedWebhook{{SubscriptionID: "wsu_a", AccountID: 1}}); err == nil {
		t.Fatal("a refused wake-up reported no error")
	}
}

// TestWaker_SharedWebhooksWakeTheirShardOnce: webhooks on the shared route
// wake the shard that owns their lane key, one signal per shard however
// many webhooks; paused webhooks wake nobody.
func TestWaker_SharedWebhooksWakeTheirShardOnce(t *testing.T) {
	f := &fakeTemporal{signals: map[string]int{}, release: make(chan struct{})}
	close(f.release)
	const shards = 4
	// A long task queue name (tests name theirs after the test): the shards'
	// fairness keys must stay within Temporal's limit.
	queue := "webhooks-" + strings.Repeat("q", 80)
	w := dispatch.NewWaker(f, "default", queue, shards, slog.New(slog.DiscardHandler))
	var lanes []deliveries.RoutedWebhook
	want := map[string]int{}
	for i := range 200 {
		id := fmt.Sprintf("wsu_%d", i)
		key := deliveries.LaneKey(fmt.Sprintf("%d https://h%d.example:443", i%7, i), id)
		lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: id, AccountID: int64(i % 7), Route: deliveries.RouteShared, LaneKey: key})
		want[workflows.ShardWorkflowID(queue, deliveries.ShardOf(key, shards), shards)] = 1
	}
	lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: "wsu_paused", AccountID: 1, Route: deliveries.RoutePaused})
	if err := w.WakeNow(context.Background(), lanes); err != nil {
		t.Fatal(err)
	}
	if len(want) != shards {
		t.Fatalf("200 webhooks fell in %d shards, want all %d", len(want), shards)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !maps.Equal(f.signals, want) {
		t.Errorf("signals %v, want one per shard %v", f.signals, want)
	}
}

// TestWaker_LeavesAloneAShardWhoseRoundPromisedToClaim: once the waker
// has read that a shard's round promised to claim for a while, a wake-up
// of that shard sends no signal until the promise ends; other shards, and
// the first wake-up before any read, are signalled as before.
func TestWaker_LeavesAloneAShardWhoseRoundPromisedToClaim(t *testing.T) {
	const shards, queue = 4, "webhooks"
	f := &fakeTemporal{signals: map[string]int{}, release: make(chan struct{})}
	close(f.release)
	w := dispatch.NewWaker(f, "default", queue, shards, slog.New(slog.DiscardHandler))
	webhookOf := func(n int) deliveries.RoutedWebhook {
		for key := range deliveries.LaneKeys {
			if deliveries.ShardOf(key, shards) == n {
				return deliveries.RoutedWebhook{SubscriptionID: fmt.Sprintf("wsu_%d", key), AccountID: 1, Route: deliveries.RouteShared, LaneKey: key}
			}
		}
		t.Fatal("no webhook of the shard")
		return deliveries.RoutedWebhook{}
	}
	const promise = 2 * time.Second
	var mu sync.Mutex
	reads := 0
	w.FollowClaimPromises(func(_ context.Context, n int) (map[int]time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		if n != shards {
			return nil, fmt.Errorf("read the promises of %d shards, want %d", n, shards)
		}
		if reads == 1 {
			return map[int]time.Duration{2: promise}, nil
		}
		return nil, nil // not renewed
	})
	steady, other := webhookOf(2), webhookOf(3)
	steadyID, otherID := workflows.ShardWorkflowID(queue, 2, shards), workflows.ShardWorkflowID(queue, 3, shards)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	w.Wake([]deliveries.RoutedWebhook{steady}) // nothing read yet: signalled
	w.Wait(ctx)
	for {
		mu.Lock()
		n := reads
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // the read's answer is taken
	for range 20 {
		w.Wake([]deliveries.RoutedWebhook{steady, other})
		w.Wait(ctx)
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(start); took > promise/2 {
		t.Fatalf("the wake-ups took %s, too long to be within the promise's window", took)
	}
	if got := f.count(steadyID); got != 1 {
		t.Errorf("the promised shard got %d signals, want only the one before the promise was read", got)
	}
	if got := f.count(otherID); got != 20 {
		t.Errorf("the other shard got %d signals for 20 wake-ups, want 20", got)
	}
	time.Sleep(time.Until(start.Add(promise)))
	w.Wake([]deliveries.RoutedWebhook{steady})
	w.Wait(ctx)
	if got := f.count(steadyID); got != 2 {
		t.Errorf("the shard got %d signals in all, want a second once its promise ended", got)
	}
}

// TestWaker_SignalsAShardOnceUntilItsRoundBegins: after a shard's signal,
// wake-ups read its count of rounds begun afresh and send no signal while
// it is the count read before that signal (the round the signal brings
// claims their commits); once a round has begun they signal again, and a
// count that cannot be read signals as before. Lanes are not counted.
func TestWaker_SignalsAShardOnceUntilItsRoundBegins(t *testing.T) {
	const shards, queue = 4, "webhooks"
	f := &fakeTemporal{signals: map[string]int{}, release: make(chan struct{})}
	close(f.release)
	w := dispatch.NewWaker(f, "default", queue, shards, slog.New(slog.DiscardHandler))
	var mu sync.Mutex
	begun := map[int]int64{}
	var readErr error
	w.FollowRoundStarts(func(_ context.Context, shard, n int) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if n != shards {
			return 0, fmt.Errorf("read the rounds of %d shards, want %d", n, shards)
		}
		return begun[shard], readErr
	})
	var shared deliveries.RoutedWebhook
	for key := range deliveries.LaneKeys {
		if deliveries.ShardOf(key, shards) == 1 {
			shared = deliveries.RoutedWebhook{SubscriptionID: fmt.Sprintf("wsu_%d", key), AccountID: 1, Route: deliveries.RouteShared, LaneKey: key}
			break
		}
	}
	own := deliveries.RoutedWebhook{SubscriptionID: "wsu_own", AccountID: 2, Route: deliveries.RouteOwn}
	shardID, laneID := workflows.ShardWorkflowID(queue, 1, shards), workflows.LaneWorkflowID("wsu_own")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wake := func(times int) {
		for range times {
			w.Wake([]deliveries.RoutedWebhook{shared, own})
			w.Wait(ctx)
		}
	}
	step := func(name string, wantShard, wantLane int) {
		t.Helper()
		if got := f.count(shardID); got != wantShard {
			t.Errorf("%s: the shard got %d signals in all, want %d", name, got, wantShard)
		}
		if got := f.count(laneID); got != wantLane {
			t.Errorf("%s: the lane got %d signals in all, want %d", name, got, wantLane)
		}
	}
	wake(10)
	step("no round begun since the first signal", 1, 10)
	mu.Lock()
	begun[1] = 1 // the signalled round begins
	mu.Unlock()
	wake(10)
	step("a round began", 2, 20)
	mu.Lock()
	readErr = errors.New("database unavailable")
	mu.Unlock()
	wake(3)
	step("the count unreadable", 5, 23)
	mu.Lock()
	readErr = nil
	mu.Unlock()
	wake(3)
	step("readable again", 6, 26)
}
