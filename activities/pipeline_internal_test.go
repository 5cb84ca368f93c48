package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// fakeReceiver answers after delay (per request, from its path and what
// the whole host has in flight), and counts what it sees in flight.
type fakeReceiver struct {
	srv *httptest.Server

	mu          sync.Mutex
	hostNow     int            // in flight to the host
	inFlight    map[string]int // by path
	maxInFlight map[string]int
	answered    map[string]time.Time // delivery id -> when its answer went
}

func newFakeReceiver(t *testing.T, delay func(path string, inFlight int) (time.Duration, int)) *fakeReceiver {
	t.Helper()
	r := &fakeReceiver{inFlight: map[string]int{}, maxInFlight: map[string]int{}, answered: map[string]time.Time{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.inFlight[req.URL.Path]++
		r.hostNow++
		r.maxInFlight[req.URL.Path] = max(r.maxInFlight[req.URL.Path], r.inFlight[req.URL.Path])
		host := r.hostNow
		r.mu.Unlock()
		d, code := delay(req.URL.Path, host)
		time.Sleep(d)
		r.mu.Lock()
		r.hostNow--
		r.inFlight[req.URL.Path]--
		r.answered[req.Header.Get(webhooks.HeaderDeliveryID)] = time.Now()
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *fakeReceiver) max(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxInFlight[path]
}

// fakeClaims hands out due deliveries as a shard claim would: at most n,
// each webhook at most its room (or initial), oldest first.
type fakeClaims struct {
	mu      sync.Mutex
	due     []deliveries.Claimed
	initial int                        // a webhook's or destination's room when not in rooms
	asked   []map[string]int           // the webhook rooms of each claim
	moved   []deliveries.RoutedWebhook // the next claim's MovedToOwn
}

func (f *fakeClaims) claim(_ context.Context, n int, r claimRooms) (deliveries.ClaimedPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r.webhooks)
	roomOf := func(m map[string]int, key string) int {
		if room, ok := m[key]; ok {
			return room
		}
		return f.initial
	}
	taken, takenTo := map[string]int{}, map[string]int{}
	var page deliveries.ClaimedPage
	rest := f.due[:0]
	for _, c := range f.due {
		dest := deliveries.DestinationKey(c.Webhook.AccountID, c.Webhook.ClientURL)
		if len(page.Claimed) < n && taken[c.Webhook.ID] < roomOf(r.webhooks, c.Webhook.ID) &&
			takenTo[dest] < roomOf(r.destinations, dest) {
			taken[c.Webhook.ID]++
			takenTo[dest]++
			page.Claimed = append(page.Claimed, c)
			continue
		}
		rest = append(rest, c)
	}
	f.due = rest
	page.MovedToOwn, f.moved = f.moved, nil
	return page, nil
}

// recorded is what a pipeline's fake writes recorded, with when.
type recorded struct {
	mu  sync.Mutex
	at  map[string]time.Time
	rec map[string]deliveries.AttemptRecord
}

func (r *recorded) write(_ context.Context, claimed []deliveries.Claimed, records []deliveries.AttemptRecord, _ []pendingLate, _ time.Time) ([]Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Outcome, len(records))
	for i, rec := range records {
		r.at[claimed[i].ID], r.rec[claimed[i].ID] = time.Now(), rec
		out[i] = outcomeOf(rec)
	}
	return out, nil
}

// pipelineHarness runs shard-round pipelines over fake claims, a fake
// record and loopback receivers.
type pipelineHarness struct {
	t      *testing.T
	rs     *Rounds
	claims *fakeClaims
	rec    *recorded
}

func newPipelineHarness(t *testing.T, tuning Tuning, limits endpointLimits) *pipelineHarness {
	t.Helper()
	return newPipelineHarnessWith(t, tuning, limits, nil)
}

// newPipelineHarnessWith is newPipelineHarness with a store for what the
// rounds write themselves (route moves, handed-over records).
func newPipelineHarnessWith(t *testing.T, tuning Tuning, limits endpointLimits, store *deliveries.Store) *pipelineHarness {
	t.Helper()
	rs := New(Deps{Store: store,
		Box: testBox(t), HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler),
		Schedule: deliveries.Schedule{Initial: time.Second, Coefficient: 2, Max: time.Minute},
		Attempts: fairshare.New(1000, 1000), AttemptTimeout: 5 * time.Second, Tuning: tuning,
		Settings: SettingsDeps{Source: &fakeSettings{}},
	}).Rounds
	if limits != nil {
		rs.limits = limits
	}
	return &pipelineHarness{t: t, rs: rs, claims: &fakeClaims{initial: rs.limits.initial()},
		rec: &recorded{at: map[string]time.Time{}, rec: map[string]deliveries.AttemptRecord{}}}
}

// due adds n deliveries of a webhook of account 1 posting to url.
func (h *pipelineHarness) due(webhookID, url string, n int) []string {
	h.t.Helper()
	return h.dueFor(1, webhookID, url, n)
}

// dueFor adds n deliveries of an account's webhook posting to url.
func (h *pipelineHarness) dueFor(accountID int64, webhookID, url string, n int) []string {
	h.t.Helper()
	target := sealedTarget(h.t, h.rs.send.keys.box, webhookID, "whsec_test")
	target.AccountID, target.ClientURL, target.Active = accountID, url, true
	ids := make([]string, n)
	h.claims.mu.Lock()
	defer h.claims.mu.Unlock()
	for i := range ids {
		ids[i] = fmt.Sprintf("wdl_%s_%d_%d", webhookID, len(h.claims.due), i)
		h.claims.due = append(h.claims.due, deliveries.Claimed{Webhook: target, ID: ids[i], EventID: "wev_" + ids[i],
			EventType: "job.run.completed", Attempt: 1, MaxAttempts: 6, Body: deliveries.FixedBody{Payload: []byte(`{}`)}})
	}
	return ids
}

// run runs one round's pipeline to its end.
func (h *pipelineHarness) run(ctx context.Context) *pipeline {
	h.t.Helper()
	p := h.rs.newPipeline(ctx, h.claims.claim, time.Now().Add(time.Minute))
	p.rec.write = h.rec.write
	if err := p.run(ctx); err != nil {
		h.t.Fatalf("pipeline: %v", err)
	}
	return p
}

// TestPipeline_FastDeliveriesDoNotWaitForASlowReceiver: deliveries that
// become due while a slow receiver holds its attempt are claimed, sent and
// recorded before that receiver answers: a round claims again as slots
// free, not once its page has ended.
func TestPipeline_FastDeliveriesDoNotWaitForASlowReceiver(t *testing.T) {
	recv := newFakeReceiver(t, func(path string, _ int) (time.Duration, int) {
		if path == "/slow" {
			return 400 * time.Millisecond, http.StatusNoContent
		}
		return 0, http.StatusNoContent
	})
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 4, Linger: 100 * time.Millisecond, Patience: 2 * time.Second}, nil)
	slow := h.due("wh_slow", recv.srv.URL+"/slow", 1)
	var fast []string
	go func() {
		time.Sleep(50 * time.Millisecond) // the slow attempt is in flight
		fast = h.due("wh_fast", recv.srv.URL+"/fast", 40)
	}()
	h.run(context.Background())
	slowAt := h.rec.at[slow[0]]
	if slowAt.IsZero() {
		t.Fatal("the slow delivery was not recorded")
	}
	for _, id := range fast {
		at, ok := h.rec.at[id]
		if !ok {
			t.Fatalf("fast delivery %s not recorded", id)
		}
		if !at.Before(slowAt) {
			t.Errorf("fast delivery %s recorded %s after the slow one: it waited for the slow receiver", id, at.Sub(slowAt))
		}
	}
}

// TestPipeline_UnreadableSettingsSendNothing: when a webhook's delivery
// settings cannot be read, a shared round sends none of its deliveries
// (not without its headers, not past a rate limit it could not see): each
// attempt records why and is retried.
func TestPipeline_UnreadableSettingsSendNothing(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 4, Patience: 2 * time.Second}, nil)
	h.rs.send.settings = newSettingsState(SettingsDeps{Source: &fakeSettings{err: errors.New("the database is away")}}, time.Now, slog.New(slog.DiscardHandler))
	ids := h.due("wh_unknown", recv.srv.URL+"/a", 3)
	h.run(context.Background())
	if got := recv.max("/a"); got != 0 {
		t.Errorf("receiver saw %d attempts in flight, want none", got)
	}
	for _, id := range ids {
		if rec := h.rec.rec[id]; rec.Status != deliveries.StatusRetrying || rec.ErrorMessage != errSettingsUnreadable.Error() {
			t.Errorf("delivery %s: %s (%q), want retrying: %q", id, rec.Status, rec.ErrorMessage, errSettingsUnreadable)
		}
	}
}

// TestPipeline_EveryPermitIsGivenBack: whatever becomes of its attempts
// (answered, handed over after the patience, given back when the round
// stops), a round leaves no attempt counted in flight against its
// webhooks and their destination.
func TestPipeline_EveryPermitIsGivenBack(t *testing.T) {
	recv := newFakeReceiver(t, func(path string, _ int) (time.Duration, int) {
		if path == "/slow" {
			return 300 * time.Millisecond, http.StatusNoContent
		}
		return 10 * time.Millisecond, http.StatusNoContent
	})
	// The store takes route moves and handed-over records of rows it does not hold.
	h := newPipelineHarnessWith(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond, Patience: 100 * time.Millisecond},
		nil, deliveries.NewStore(testenv.NewDatabase(t).Pool))
	h.due("wh_slow", recv.srv.URL+"/slow", 20)
	h.due("wh_fast", recv.srv.URL+"/fast", 60)
	for range 3 {
		h.run(context.Background())
	}
	Drain(context.Background(), h.rs)
	dest := destinationOf(deliveries.WebhookTarget{AccountID: 1, ClientURL: recv.srv.URL})
	for _, id := range []string{"wh_slow", "wh_fast"} {
		if s, ok := h.rs.limits.(adaptiveLimits).l.Snapshot(id); ok && s.InFlight != 0 {
			t.Errorf("%s: %d attempts still counted in flight after every round ended", id, s.InFlight)
		}
	}
	if s, ok := h.rs.limits.(adaptiveLimits).l.DestinationSnapshot(dest); ok && s.InFlight != 0 {
		t.Errorf("destination: %d attempts still counted in flight", s.InFlight)
	}
}

// TestPipeline_AGivenUpRoundStillRecordsWhatWasAnswered: a round whose
// claim fails (its database connections cut) gives up, but the outcomes
// it had gathered and not yet written are written all the same, so their
// deliveries are not sent again when their leases end.
func TestPipeline_AGivenUpRoundStillRecordsWhatWasAnswered(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 8, MaxInFlight: 4, Linger: time.Second, Patience: 2 * time.Second}, nil)
	ids := h.due("wh_a", recv.srv.URL+"/a", 3)
	var p *pipeline
	calls := 0
	claim := func(ctx context.Context, n int, r claimRooms) (deliveries.ClaimedPage, error) {
		calls++
		switch {
		case calls == 1:
			return h.claims.claim(ctx, n, r)
		case len(p.rec.records) < len(ids): // until the three answers are gathered
			return deliveries.ClaimedPage{}, nil
		default:
			return deliveries.ClaimedPage{}, errors.New("connection cut")
		}
	}
	p = h.rs.newPipeline(context.Background(), claim, time.Now().Add(time.Minute))
	p.rec.write = h.rec.write
	p.rec.gather = time.Minute // gathered, not written, when the claim fails
	if err := p.run(context.Background()); err == nil {
		t.Fatal("the round did not give up when its claim failed")
	}
	h.rs.outstanding.Wait()
	for _, id := range ids {
		if got := h.rec.rec[id].Status; got != deliveries.StatusSucceeded {
			t.Errorf("delivery %s: recorded %q, want succeeded (answered before the round gave up)", id, got)
		}
	}
}

// TestPipeline_ARoundAtItsLimitStartsWhatItQueued: a round that has
// claimed its limit stops claiming but starts what it claimed as its
// webhook's room frees, rather than give the queue back for another claim
// to take again (a fan-out round gave back 142 deliveries a round).
func TestPipeline_ARoundAtItsLimitStartsWhatItQueued(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 5 * time.Millisecond, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 4, Patience: 2 * time.Second}, nil)
	h.claims.initial = 30 // the first claim takes the round's limit at once
	ids := h.due("wh_a", recv.srv.URL+"/a", 60)
	p := h.rs.newPipeline(context.Background(), h.claims.claim, time.Now().Add(time.Minute))
	p.limit = 30
	p.rec.write = h.rec.write
	if err := p.run(context.Background()); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if len(p.giveBack) != 0 {
		t.Errorf("gave back %d claimed deliveries, want none", len(p.giveBack))
	}
	for _, id := range ids[:30] {
		if h.rec.rec[id].Status != deliveries.StatusSucceeded {
			t.Errorf("delivery %s: status %q, want succeeded", id, h.rec.rec[id].Status)
		}
	}
	if got := recv.max("/a"); got > 4 {
		t.Errorf("receiver saw %d in flight, want at most the limit 4", got)
	}
}

// slowWaker takes its time to wake lanes, as Temporal does under load.
type slowWaker struct {
	delay time.Duration
	mu    sync.Mutex
	woken []string
}

func (w *slowWaker) WakeNow(_ context.Context, webhooks []deliveries.RoutedWebhook) error {
	time.Sleep(w.delay)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range webhooks {
		w.woken = append(w.woken, r.SubscriptionID)
	}
	return nil
}

// TestPipeline_WakingOwnLanesHoldsUpNoDelivery: a claim that moved
// webhooks to their own lanes wakes those lanes beside the round's loop,
// so the round's other deliveries start at once (waking fifty lanes took
// up to 0.5 s of the loop), and the round still returns only once they
// are woken.
func TestPipeline_WakingOwnLanesHoldsUpNoDelivery(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, Patience: 2 * time.Second}, nil)
	waker := &slowWaker{delay: 500 * time.Millisecond}
	h.rs.wake = wakeups{waker: waker, logger: slog.New(slog.DiscardHandler)}
	h.claims.moved = []deliveries.RoutedWebhook{{SubscriptionID: "wh_slow", AccountID: 2, Route: deliveries.RouteOwn}}
	ids := h.due("wh_b", recv.srv.URL+"/b", 10)
	start := time.Now()
	h.run(context.Background())
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, id := range ids {
		if at, ok := recv.answered[id]; !ok || at.Sub(start) > 250*time.Millisecond {
			t.Errorf("delivery %s answered %s after the round started, want within 250ms (the lanes take 500ms to wake)", id, at.Sub(start))
		}
	}
	if len(waker.woken) != 1 || waker.woken[0] != "wh_slow" {
		t.Errorf("woken %v by the round's end, want [wh_slow]", waker.woken)
	}
}

// BenchmarkNewPipeline is what a round costs before its first claim: a
// trickle of events runs a round for every few deliveries.
func BenchmarkNewPipeline(b *testing.B) {
	rs := &Rounds{attempts: fairshare.New(DefaultMaxConcurrentAttempts, DefaultMaxConcurrentAttempts/2),
		tuning: Tuning{PageSize: 200}, outcomes: &outcomeWriter{}}
	b.ReportAllocs()
	for b.Loop() {
		p := rs.newPipeline(context.Background(), nil, time.Time{})
		p.stop()
	}
}

// TestPipeline_AnAttemptThatWaitedOutItsLeaseDoesNotStart: an attempt
// that got its worker slot too late for its claim's lease to cover its
// timeout is given back unsent; sent, it could be sent a second time by a
// round that claimed the delivery once the lease ended.
func TestPipeline_AnAttemptThatWaitedOutItsLeaseDoesNotStart(t *testing.T) {
	release := make(chan struct{})
	recv := newFakeReceiver(t, func(path string, _ int) (time.Duration, int) {
		if path == "/hold" {
			<-release
		}
		return 0, http.StatusNoContent
	})
	// The patience outlasts the clock's jump: the held attempt is not
	// handed over (it records itself elsewhere) however late it answers.
	h := newPipelineHarnessWith(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond, Patience: time.Minute},
		nil, deliveries.NewStore(testenv.NewDatabase(t).Pool))
	one := fairshare.New(1, 1) // the account's only slot: /hold keeps it
	h.rs.attempts, h.rs.send.attempts = one, one
	var ahead atomic.Int64 // the rounds' clock runs ahead of the fence's by this
	h.rs.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	held := h.due("wh_hold", recv.srv.URL+"/hold", 1)

	done := make(chan *pipeline)
	go func() { done <- h.run(context.Background()) }()
	for recv.max("/hold") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	late := h.due("wh_late", recv.srv.URL+"/late", 1)
	time.Sleep(100 * time.Millisecond) // claimed, /late waits for the slot
	ahead.Store(int64(leaseSlack + time.Second))
	close(release)
	p := <-done

	if recv.max("/late") != 0 {
		t.Fatal("an attempt whose lease could no longer cover its timeout was sent")
	}
	if _, ok := h.rec.rec[held[0]]; !ok {
		t.Errorf("the held delivery was not recorded")
	}
	if _, ok := h.rec.rec[late[0]]; ok {
		t.Errorf("the late delivery was recorded as attempted")
	}
	if !slices.Contains(p.gaveBack, late[0]) {
		t.Errorf("given back %v, want %s among them", p.gaveBack, late[0])
	}
}

// TestPipeline_APromisedRoundClaimsUntilItsPromiseEnds: a round that
// promised to claim (a steady shard's; the API then wakes nobody for what
// it commits) goes on claiming when nothing is due, past its linger, and
// takes what becomes due shortly before its promise ends.
func TestPipeline_APromisedRoundClaimsUntilItsPromiseEnds(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond}, nil)
	first := h.due("wh_steady", recv.srv.URL+"/steady", 1)
	const promise = 700 * time.Millisecond
	lateDue := make(chan []string, 1)
	go func() {
		time.Sleep(promise - 200*time.Millisecond) // long after the linger
		lateDue <- h.due("wh_steady", recv.srv.URL+"/steady", 1)
	}()
	start := time.Now()
	p := h.rs.newPipeline(context.Background(), h.claims.claim, time.Now().Add(time.Minute))
	p.rec.write = h.rec.write
	p.claimsUntil = start.Add(promise)
	if err := p.run(context.Background()); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if took := time.Since(start); took < promise {
		t.Fatalf("the round ended after %s, before its promise of %s", took.Round(time.Millisecond), promise)
	}
	for _, id := range append(first, <-lateDue...) {
		if _, ok := h.rec.rec[id]; !ok {
			t.Errorf("delivery %s, due within the promise, was not attempted by the round", id)
		}
	}
}

// TestPipeline_ARoundPromisesToClaimOnceItFindsWorkSteadily: a shard's
// round that has found work at its claims for a while promises (once) to
// claim for the rest of its window, and does; a steady one promises at
// its start; one woken by a single delivery ends after its linger and
// promises nothing.
func TestPipeline_ARoundPromisesToClaimOnceItFindsWorkSteadily(t *testing.T) {
	const window = time.Second
	for _, tc := range []struct {
		name     string
		every    time.Duration // a delivery comes due this often (0: one only)
		steady   bool
		promises int
	}{
		{"one delivery", 0, false, 0},
		{"a delivery every 20ms for 600ms", 20 * time.Millisecond, false, 1},
		{"steady, one delivery", 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
			h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 50 * time.Millisecond}, nil)
			h.due("wh_traffic", recv.srv.URL+"/traffic", 1)
			if tc.every > 0 {
				go func() {
					for range int(600 * time.Millisecond / tc.every) {
						time.Sleep(tc.every)
						h.due("wh_traffic", recv.srv.URL+"/traffic", 1)
					}
				}()
			}
			start := time.Now()
			p := h.rs.newPipeline(context.Background(), h.claims.claim, time.Now().Add(time.Minute))
			p.rec.write = h.rec.write
			p.claimFor, p.steady = window, tc.steady
			var promisedAt, promised []time.Duration
			p.promise = func(_ context.Context, d time.Duration) time.Time {
				promisedAt, promised = append(promisedAt, time.Since(start)), append(promised, d)
				return time.Now().Add(d)
			}
			if err := p.run(context.Background()); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			took := time.Since(start)
			if len(promisedAt) != tc.promises {
				t.Fatalf("the round promised at %v, want %d promises", promisedAt, tc.promises)
			}
			if tc.promises == 0 {
				return
			}
			if (!tc.steady && promisedAt[0] < steadyAfter) || promisedAt[0]+promised[0] > window+10*time.Millisecond || took < window-10*time.Millisecond {
				t.Errorf("promised %s after %s and ended after %s; want the rest of its %s window, promised %s, kept",
					promised[0].Round(time.Millisecond), promisedAt[0].Round(time.Millisecond), took.Round(time.Millisecond), window,
					map[bool]string{true: "at its start", false: "after " + steadyAfter.String()}[tc.steady])
			}
		})
	}
}

// TestPipeline_ALeaseCountsFromTheClaimsStart: the database starts a
// claim's lease when its statement starts; a claim that took longer than
// the lease's slack to answer (a chaos run's database cuts) leaves too
// little of it for an attempt, which is given back unsent: counted from
// the answer, the worker's lease outlasted the database's and another
// round sent the delivery again while the first attempt's outcome waited
// to be recorded.
func TestPipeline_ALeaseCountsFromTheClaimsStart(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarnessWith(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond},
		nil, deliveries.NewStore(testenv.NewDatabase(t).Pool))
	var ahead atomic.Int64 // the rounds' clock runs ahead of the fence's by this
	h.rs.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	slow := h.due("wh_slow_claim", recv.srv.URL+"/slow-claim", 1)
	var once sync.Once
	claim := func(ctx context.Context, n int, rooms claimRooms) (deliveries.ClaimedPage, error) {
		page, err := h.claims.claim(ctx, n, rooms)
		once.Do(func() { ahead.Store(int64(leaseSlack + time.Second)) }) // the answer came 6 s late
		return page, err
	}
	p := h.rs.newPipeline(context.Background(), claim, time.Now().Add(time.Minute))
	p.rec.write = h.rec.write
	if err := p.run(context.Background()); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if recv.max("/slow-claim") != 0 {
		t.Fatal("an attempt was sent on a lease the database had started 6 s before its claim answered")
	}
	if !slices.Contains(p.gaveBack, slow[0]) {
		t.Errorf("given back %v, want %s among them", p.gaveBack, slow[0])
	}
}

// TestPipeline_ALeaseCountsFromTheClaimsSend: a claim that waited for a
// connection before its statement was sent (ConnectionWait) has its
// leases, and the webhook states it read, start after that wait, as the
// database's do: its attempt goes. Counted from before the wait, the same
// claim left the attempt too little lease (and a state too old for the
// fence), and it was given back unsent.
func TestPipeline_ALeaseCountsFromTheClaimsSend(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	h := newPipelineHarnessWith(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond},
		nil, deliveries.NewStore(testenv.NewDatabase(t).Pool))
	var ahead atomic.Int64 // how far the rounds' clock has moved on
	h.rs.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	waited := h.due("wh_waited", recv.srv.URL+"/waited", 1)
	wait := leaseSlack + time.Second
	var once sync.Once
	claim := func(ctx context.Context, n int, rooms claimRooms) (deliveries.ClaimedPage, error) {
		first := false
		once.Do(func() { ahead.Store(int64(wait)); first = true }) // 6 s for a connection, then the statement at once
		page, err := h.claims.claim(ctx, n, rooms)
		if first {
			page.ConnectionWait = wait
		}
		return page, err
	}
	p := h.rs.newPipeline(context.Background(), claim, time.Now().Add(time.Minute))
	p.rec.write = h.rec.write
	if err := p.run(context.Background()); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if recv.max("/waited") == 0 || slices.Contains(p.gaveBack, waited[0]) {
		t.Errorf("the attempt was not sent (given back: %v): its lease counted from before the claim's wait for a connection", p.gaveBack)
	}
}

// TestPipeline_ARoundClaimsForItsClaimWindowOnly: a round whose webhooks
// always have deliveries due (steady traffic) stops claiming once its
// claimFor has passed and ends with what it claimed, far before its limit
// of attempts: a shard's round is a local activity inside a workflow task
// and must end before that task needs a heartbeat.
func TestPipeline_ARoundClaimsForItsClaimWindowOnly(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 20 * time.Millisecond, http.StatusNoContent })
	h := newPipelineHarness(t, Tuning{PageSize: 50, MaxInFlight: 4, Linger: 50 * time.Millisecond, Patience: 2 * time.Second}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // new deliveries due all the time
		for ctx.Err() == nil {
			h.due("wh_busy", recv.srv.URL+"/busy", 4)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	p := h.rs.newPipeline(ctx, h.claims.claim, time.Now().Add(time.Minute))
	p.claimFor = 300 * time.Millisecond
	var recorded int // records written (the harness's ids repeat across batches)
	p.rec.write = func(ctx context.Context, claimed []deliveries.Claimed, records []deliveries.AttemptRecord, late []pendingLate, at time.Time) ([]Outcome, error) {
		recorded += len(records)
		return h.rec.write(ctx, claimed, records, late, at)
	}
	start := time.Now()
	if err := p.run(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	took := time.Since(start)
	// At 4 in flight and 20 ms an answer, the limit of 2,000 attempts
	// would take 10 s; the claim window ends the round within a second.
	if took > 3*time.Second || p.attempted == 0 || p.attempted >= p.limit {
		t.Fatalf("the round took %s for %d attempts (limit %d), want it to end soon after its 300 ms claim window", took, p.attempted, p.limit)
	}
	if recorded+len(p.gaveBack) != p.attempted || recorded == 0 {
		t.Errorf("%d recorded and %d given back of %d claimed, want every claimed delivery recorded or given back before the round ended",
			recorded, len(p.gaveBack), p.attempted)
	}
}

// TestPipeline_AnswersCallAClaimAtOnceOnlyWhenTheLastHeldSomeBack: under
// a trickle (every claim finds one delivery) freed room calls the next
// claim at once only when the claim said it held due deliveries back
// (ClaimedPage.More); otherwise deliveries gather for the claim's pace,
// doubling to ClaimGather, and a round claims a few times in its window,
// not once for every answer.
func TestPipeline_AnswersCallAClaimAtOnceOnlyWhenTheLastHeldSomeBack(t *testing.T) {
	const window = 500 * time.Millisecond
	for _, tc := range []struct {
		name      string
		more      bool
		minClaims int
		maxClaims int
	}{
		// 5+10+20+40+80+100+100+... ms: about nine claims in 500 ms.
		{"the claim took all that was due", false, 3, 15},
		// A claim about 5 ms after each instant answer.
		{"the claim held deliveries back", true, 30, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
			h := newPipelineHarness(t, Tuning{PageSize: 8, MaxInFlight: 8, Linger: time.Second,
				ClaimGather: 100 * time.Millisecond, Patience: 2 * time.Second}, nil)
			target := sealedTarget(t, h.rs.send.keys.box, "wh_trickle", "whsec_test")
			target.AccountID, target.ClientURL, target.Active = 1, recv.srv.URL+"/trickle", true
			claims := 0
			claim := func(_ context.Context, n int, _ claimRooms) (deliveries.ClaimedPage, error) {
				claims++
				id := fmt.Sprintf("wdl_trickle_%d", claims)
				return deliveries.ClaimedPage{More: tc.more, Claimed: []deliveries.Claimed{{Webhook: target, ID: id,
					EventID: "wev_" + id, EventType: "job.run.completed", Attempt: 1, MaxAttempts: 6,
					Body: deliveries.FixedBody{Payload: []byte(`{}`)}}}}, nil
			}
			p := h.rs.newPipeline(context.Background(), claim, time.Now().Add(time.Minute))
			p.rec.write = h.rec.write
			p.claimFor = window
			if err := p.run(context.Background()); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			if claims < tc.minClaims || claims > tc.maxClaims {
				t.Fatalf("%d claims in a %s window, want %d to %d", claims, window, tc.minClaims, tc.maxClaims)
			}
			if len(h.rec.rec) != claims {
				t.Errorf("%d deliveries recorded of %d claimed", len(h.rec.rec), claims)
			}
		})
	}
}

// TestPipeline_NextClaim: after a claim, the next comes at once after a
// backlog's quarter page, after the gather's poll after a few, at a
// growing poll while nothing is due, and after the longest poll when the
// claim took nothing and held back what it saw (every room full: answers
// call the next claim, run), not at the poll that finds nothing five
// times a round trip.
func TestPipeline_NextClaim(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const poll = 10 * time.Millisecond
	lingerUntil := now.Add(time.Second)
	for _, tc := range []struct {
		name     string
		n        int
		pressed  bool
		wantIn   time.Duration
		wantPoll time.Duration
	}{
		{"a backlog's quarter page", 50, true, 0, lingerPollFirst},
		{"a few", 3, false, poll, 2 * poll},
		{"a few, held back", 3, true, poll, 2 * poll},
		{"nothing due", 0, false, poll, 2 * poll},
		{"nothing taken, rooms full", 0, true, lingerPollMax, poll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newPipelineHarness(t, Tuning{PageSize: 200, Linger: 100 * time.Millisecond}, nil)
			h.rs.now = func() time.Time { return now }
			p := h.rs.newPipeline(t.Context(), h.claims.claim, now.Add(time.Minute))
			p.pressed = tc.pressed
			at, nextPoll, _ := p.nextClaim(tc.n, poll, lingerUntil)
			if in := at.Sub(now); in != tc.wantIn || nextPoll != tc.wantPoll {
				t.Errorf("next claim in %s with poll %s, want in %s with poll %s", in, nextPoll, tc.wantIn, tc.wantPoll)
			}
		})
	}
}
