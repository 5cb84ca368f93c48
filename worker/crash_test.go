package worker_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestCrash_WorkerKilledMidBatchDeliversEverything: a worker process is
// SIGKILLed while its shard has a page of attempts in flight; another
// worker takes over. Every delivery arrives; a delivery sent twice (its
// outcome was lost with the worker) carries the same delivery id both
// times, and its record counts every attempt that went out. The same with
// the events on one webhook, and spread over 100, one each.
func TestCrash_WorkerKilledMidBatchDeliversEverything(t *testing.T) {
	for _, tc := range []struct {
		name     string
		webhooks int
	}{{"concentrated", 1}, {"spread", 100}} {
		t.Run(tc.name, func(t *testing.T) { killWorkerMidBurst(t, tc.webhooks) })
	}
}

func killWorkerMidBurst(t *testing.T, webhookCount int) {
	e := newEnv(t, false, map[string]string{"DELIVERY_TIMEOUT": "2s", "DELIVERY_PAGE_SIZE": "20"})
	var mu sync.Mutex
	arrived := 0
	killAt := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		arrived++
		if arrived == 30 {
			close(killAt)
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	// With one webhook it takes every event (all jobs); with more, webhook
	// i takes job i's.
	subs := make([]webhooks.Subscription, webhookCount)
	for i := range subs {
		var jobs []int64
		if webhookCount > 1 {
			jobs = []int64{int64(i)}
		}
		sub, secret := e.subscribe(rc.URL, allTypes, jobs, true)
		if i == 0 {
			rc.setSecret(secret)
		}
		subs[i] = sub
	}
	subOf := func(event int) string { return subs[event%webhookCount].ID }

	proc := startWorkerProcess(t, e.cfg)
	const events = 100
	ids := make([]string, events)
	var wg sync.WaitGroup
	for i := range events {
		wg.Go(func() { ids[i] = e.post(webhooks.EventRunCompleted, int64(i), "") })
	}
	wg.Wait()
	select {
	case <-killAt:
	case <-time.After(60 * time.Second):
		t.Fatal("deliveries never started")
	}
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	_ = proc.Wait()
	e.startWorker(e.cfg)

	want := map[string]int{} // delivery id -> event index
	for i, id := range ids {
		want[e.deliveryID(id, subOf(i))] = i
	}
	for i, id := range ids {
		if d := e.waitDelivery(id, subOf(i)); d.Status != deliveries.StatusSucceeded {
			t.Errorf("delivery %s: %s", d.ID, d.Status)
		}
	}
	posts := map[string]int{}
	highest := map[string]int{} // the highest attempt number the receiver saw
	before := 0
	for _, r := range rc.got() {
		if r.ArrivedAt.Before(killedAt) {
			before++
		}
		did := r.Header.Get("Webhook-Delivery-Id")
		if _, ok := want[did]; !ok {
			t.Fatalf("receiver got an unknown delivery %q", did)
		}
		posts[did]++
		n, err := strconv.Atoi(r.Header.Get(webhooks.HeaderAttempt))
		if err != nil || n < 1 {
			t.Fatalf("delivery %s arrived with attempt %q", did, r.Header.Get(webhooks.HeaderAttempt))
		}
		highest[did] = max(highest[did], n)
	}
	if len(posts) != events {
		t.Fatalf("%d distinct deliveries arrived, want %d", len(posts), events)
	}
	resent := 0
	for did, n := range posts {
		i := want[did]
		d := e.record(ids[i], subOf(i))
		// Sent, its outcome lost with the worker: the next claim sends it
		// again under the same attempt number (numbered by what was sent,
		// docs/delivery.md), so the record counts every number the
		// receiver saw, not every send.
		if d.AttemptCount < highest[did] {
			t.Errorf("delivery %s arrived as attempt %d but records %d attempts", did, highest[did], d.AttemptCount)
		}
		if n > 1 {
			resent++
		}
	}
	t.Logf("%d deliveries to %d webhooks, %d arrivals before the kill, %d sent again after it", events, webhookCount, before, resent)
}

// TestCrash_TemporalDownAtIngestionAndRestarted: with Temporal down, an
// event is still accepted (it is durable in PostgreSQL); once Temporal is
// back, the sweeper wakes the webhook's lane and the event is delivered.
// A lane woken before a Temporal restart carries on after it.
func TestCrash_TemporalDownAtIngestionAndRestarted(t *testing.T) {
	address := testenv.FreeAddress(t)
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	first := testenv.StartTemporalServer(t, address, dbFile)

	database := testenv.NewDatabase(t)
	cfg := testConfig(t, database.URL, address, map[string]string{"DELIVERY_OVERDUE_GRACE": "1s"})
	e := newEnvWith(t, database, cfg)
	if err := dispatch.EnsureSearchAttributes(context.Background(), e.temporal, cfg.TemporalNamespace); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)

	woken := e.post(webhooks.EventRunStarted, 4, "") // its shard starts; no worker yet
	waitFor(t, func() bool {
		_, err := e.temporal.DescribeWorkflowExecution(context.Background(), e.shardOf(sub.ID), "")
		return err == nil
	})
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	stored := e.post(webhooks.EventRunCompleted, 4, "") // Temporal is down: still 202

	testenv.StartTemporalServer(t, address, dbFile)
	e.temporal = dialTemporal(t, cfg)
	e.startWorker(cfg)
	// The sweeper runs every minute; trigger it now rather than wait.
	if err := e.temporal.ScheduleClient().GetHandle(context.Background(), workflows.SweepScheduleID).Trigger(context.Background(), triggerNow()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{woken, stored} {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("delivery of %s: %s", id, d.Status)
		}
	}
	if got := rc.got(); len(got) != 2 || !got[0].Signed || !got[1].Signed {
		t.Errorf("receiver got %d requests, want 2 signed", len(got))
	}
}
