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
		lanes = append(lanes, deliveries.RoutedWebhook{SubscriptionID: id, AccountID: int64(i % 7), Route: deliveries.RouteShared})
		want[workflows.ShardWorkflowID(queue, deliveries.ShardOf(deliveries.LaneKey(id), shards), shards)] = 1
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
