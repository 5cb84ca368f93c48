package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// ShardRoundInput asks for one round of a shard: shard Shard of Shards.
// Report lists attempts that earlier rounds handed over, whose recorded
// outcomes this round reports.
type ShardRoundInput struct {
	Shard         int
	Shards        int
	WorkflowID    string
	WorkflowRunID string
	Report        []HandedOver `json:",omitempty"`
}

// HandedOver is an attempt still running when its round's patience ended:
// it goes on outside the round, records its outcome when it ends, and a
// later round of the same shard reports that outcome.
type HandedOver struct {
	DeliveryID string
	Attempt    int32
	WebhookID  string
	// By is when its outcome is recorded at the latest (the attempt's
	// deadline, with a margin); after that it is reported lost, and the
	// delivery is attempted again once its lease ends.
	By time.Time
}

// ShardRoundResult is a shard round's outcomes and what the shard should do
// next.
type ShardRoundResult struct {
	Outcomes []Outcome
	// Handed are this round's attempts still running when its patience
	// ended, and Isolated the webhooks that moved to their own lanes for it.
	Handed   []HandedOver `json:",omitempty"`
	Isolated []string     `json:",omitempty"`
	// Reported are the outcomes of attempts handed over by earlier rounds,
	// recorded since (or lost, Error says so).
	Reported []Outcome `json:",omitempty"`
	// Report is what the shard carries to a later round: handed-over
	// attempts not recorded yet, the first due for a report in ReportIn.
	Report   []HandedOver  `json:",omitempty"`
	ReportIn time.Duration `json:",omitempty"`
	// Ended counts deliveries ended because their webhook was deactivated
	// (skipped) or deleted (cancelled).
	Ended int `json:",omitempty"`
	// Pending: the shard has deliveries not final; the next is due in
	// NextDueIn (zero or negative: now).
	Pending   bool
	NextDueIn time.Duration
	// Stopped, when set, says why this shard has nothing to do ever (the
	// workers run another number of shards).
	Stopped string `json:",omitempty"`
}

// sharedRoundLimit bounds the attempts of one shard round: its marker in
// the history stays a few hundred KB at most.
const sharedRoundLimit = 1000

// gatherMax bounds how long a round lets deliveries gather after a small
// page: what it adds to a delivery's latency under a trickle of events.
const gatherMax = 20 * time.Millisecond

// handOverMargin is added to an attempt's deadline to bound when its
// outcome must be recorded.
const handOverMargin = 5 * time.Second

// DeliverShardRound is one round of a shard: it reports what earlier
// rounds handed over, then claims pages of the shard's due deliveries
// across its webhooks (in turns by account, each webhook's page share
// bounded) and attempts each page with at most the webhook cap in flight
// per webhook, until it has attempted sharedRoundLimit or found nothing due
// for the linger. A page waits for its attempts at most the patience:
// attempts still running then are handed over and their webhooks move to
// lanes of their own (the round then ends, so the shard learns at once);
// attempts that had not started are given back.
func (a *Activities) DeliverShardRound(ctx context.Context, in ShardRoundInput) (ShardRoundResult, error) {
	t := a.deps.Tuning
	if in.Shards != t.Shards {
		return ShardRoundResult{Stopped: fmt.Sprintf("the workers run %d shards, not %d", t.Shards, in.Shards)}, nil
	}
	var res ShardRoundResult
	var err error
	if res.Reported, res.Report, err = a.reportHandedOver(ctx, in.Report); err != nil {
		return ShardRoundResult{}, err
	}
	lingerUntil := a.deps.Now().Add(t.Linger)
	poll := lingerPollFirst
	for attempted := 0; attempted < sharedRoundLimit; {
		lease := a.deps.AttemptTimeout + leaseSlack
		leasedUntil := a.deps.Now().Add(lease)
		observed := a.deps.Now()
		page, err := a.deps.Store.ClaimShared(ctx, deliveries.SharedClaim{
			Shard: in.Shard, Shards: in.Shards, PerKey: t.PageSize, PerWebhook: t.PageSize, Limit: t.PageSize,
			Lease: lease, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID, OrderMaxWait: a.deps.OrderMaxWait,
		})
		if err != nil {
			return ShardRoundResult{}, err
		}
		for i := range page.Claimed {
			page.Claimed[i].Webhook.ObservedAt = observed
		}
		res.Ended += len(page.Ended)
		if len(page.Moved) > 0 {
			a.wakeOwnLanes(ctx, page.Moved)
		}
		if page.Claimed, err = a.sendLimitedToOwnLanes(ctx, page.Claimed); err != nil {
			return ShardRoundResult{}, err
		}
		if len(page.Claimed) > 0 {
			handed, err := a.deliverSharedPage(ctx, page.Claimed, leasedUntil, &res)
			if err != nil {
				return ShardRoundResult{}, err
			}
			attempted += len(page.Claimed)
			if handed {
				break // the shard learns of the moves now
			}
			lingerUntil = a.deps.Now().Add(t.Linger)
			if len(page.Claimed) >= t.PageSize/4 {
				poll = lingerPollFirst
				continue // a backlog: take the next page at once
			}
			// A small page: let deliveries gather a moment, so a trickle of
			// events costs one claim and one record per few milliseconds,
			// not per event.
			select {
			case <-ctx.Done():
				return ShardRoundResult{}, ctx.Err()
			case <-time.After(poll):
			}
			poll = min(2*poll, gatherMax)
			continue
		}
		if !a.deps.Now().Before(lingerUntil) {
			break
		}
		select {
		case <-ctx.Done():
			return ShardRoundResult{}, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, lingerPollMax)
	}
	res.Report = append(res.Report, res.Handed...)
	if len(res.Report) > 0 {
		first := res.Report[0].By
		for _, h := range res.Report {
			if h.By.Before(first) {
				first = h.By
			}
		}
		res.ReportIn = max(first.Sub(a.deps.Now()), 0)
	}
	res.NextDueIn, res.Pending, err = a.deps.Store.NextDueShared(ctx, in.Shard, in.Shards)
	if err != nil {
		return ShardRoundResult{}, err
	}
	return res, nil
}

// attemptState is where one attempt of a shared page stands.
type attemptState int

const (
	attemptWaiting    attemptState = iota // for its webhook's cap or a slot
	attemptStarted                        // sent, no answer yet
	attemptDone                           // recorded in the page's results
	attemptNotStarted                     // the page stopped first
)

// deliverSharedPage attempts a claimed page across webhooks, records what
// finished within the patience, hands over what is still running (its
// webhooks move to their own lanes) and gives back what never started.
// True when it handed something over.
func (a *Activities) deliverSharedPage(ctx context.Context, claimed []deliveries.Claimed, leasedUntil time.Time, res *ShardRoundResult) (bool, error) {
	t := a.deps.Tuning
	signers := map[string]signer{}
	for _, c := range claimed {
		if _, ok := signers[c.Webhook.ID]; !ok {
			signers[c.Webhook.ID] = a.signer(ctx, c.Webhook)
		}
	}
	type result struct {
		i    int
		rec  deliveries.AttemptRecord
		late pendingLate
	}
	var (
		mu      sync.Mutex
		state   = make([]attemptState, len(claimed))
		stopped bool
	)
	// start is asked once an attempt holds its slot: it starts unless the
	// page has stopped.
	start := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			state[i] = attemptNotStarted
			return false
		}
		state[i] = attemptStarted
		return true
	}
	startCtx, stopStarting := context.WithCancel(ctx)
	defer stopStarting()
	results := make(chan result, len(claimed))
	order := newPageOrder(claimed)
	// handedDone marks the attempts handed over: they record themselves.
	var handedDone sync.Map // index -> true once handed over
	attempt := func(i int) {
		c := claimed[i]
		// The request is not the round's: an attempt handed over runs to its
		// own deadline after the round has returned.
		if !order.mayGo(startCtx, i) {
			// Its run's started in this page did not end: it stays pending
			// (given back with what never started), behind the started.
			results <- result{i: i}
			return
		}
		rec, late := a.attemptClaimed(context.WithoutCancel(ctx), c, signers[c.Webhook.ID],
			&attemptGate{ctx: startCtx, start: func() bool { return start(i) }})
		order.ended(i, rec.Status)
		if rec.Status == "" { // not started: the page stopped, or its webhook changed
			mu.Lock()
			if state[i] == attemptStarted {
				state[i] = attemptNotStarted
			}
			_, handed := handedDone.Load(i)
			mu.Unlock()
			if !handed {
				results <- result{i: i} // given back with what never started
			}
			return
		}
		mu.Lock()
		_, handed := handedDone.Load(i)
		if !handed {
			state[i] = attemptDone
		}
		mu.Unlock()
		if !handed {
			results <- result{i: i, rec: rec, late: late}
			return
		}
		a.recordHandedOver(c, rec, late, leasedUntil)
	}
	// Each webhook's attempts, oldest due first, by at most its cap of
	// workers: with a cap of 1 they go in order.
	queues := map[string][]int{}
	var webhooks []string
	for i, c := range claimed {
		if _, ok := queues[c.Webhook.ID]; !ok {
			webhooks = append(webhooks, c.Webhook.ID)
		}
		queues[c.Webhook.ID] = append(queues[c.Webhook.ID], i)
	}
	for _, id := range webhooks {
		work := make(chan int, len(queues[id]))
		for _, i := range queues[id] {
			work <- i
		}
		close(work)
		for range min(max(t.MaxInFlight, 1), len(queues[id])) {
			a.handedOver.Add(1)
			go func() {
				defer a.handedOver.Done()
				for i := range work {
					if startCtx.Err() != nil {
						continue // the page stopped: it never starts
					}
					attempt(i)
				}
			}()
		}
	}

	// Outcomes are written in small groups as they arrive, so a fast
	// answer is not held back by a slow one in the same page.
	recorder := newOutcomeRecorder(a, recordDeadline(ctx, leasedUntil))
	gather := func(r result) { recorder.add(claimed[r.i], r.rec, r.late) }
	patience := time.NewTimer(t.Patience)
	defer patience.Stop()
	held := 0 // attempts kept back by the page's per-run order
wait:
	for recorder.gathered()+held < len(claimed) {
		select {
		case r := <-results:
			if r.rec.Status == "" {
				held++
			} else {
				gather(r)
			}
			if recorder.gathered()+held < len(claimed) {
				continue
			}
		case <-recorder.due:
		case <-patience.C:
			break wait
		}
		if err := recorder.flush(ctx); err != nil {
			return false, err
		}
	}
	// Stop the page: what has not started never will; what is still
	// running is handed over.
	mu.Lock()
	stopped = true
	var handed, release []int
	for i, st := range state {
		switch st {
		case attemptStarted:
			handed = append(handed, i)
			handedDone.Store(i, true)
		case attemptWaiting, attemptNotStarted:
			release = append(release, i)
		}
	}
	mu.Unlock()
	stopStarting()
	// Results that arrived between the timer and the stop.
	for len(results) > 0 {
		if r := <-results; r.rec.Status != "" {
			gather(r)
		}
	}
	if err := recorder.flush(ctx); err != nil {
		return false, err
	}
	res.Outcomes = append(res.Outcomes, recorder.outcomes...)
	if len(release) > 0 {
		ids := make([]string, len(release))
		for k, i := range release {
			ids[k] = claimed[i].ID
		}
		if err := a.deps.Store.ReleaseClaims(ctx, ids); err != nil {
			// They come back when their lease ends; their attempt counted.
			a.deps.Logger.WarnContext(ctx, "cannot give back deliveries a shard round did not attempt", "error", err.Error())
		}
	}
	if len(handed) == 0 {
		return false, nil
	}
	by := a.deps.Now().Add(a.deps.AttemptTimeout + handOverMargin)
	slow := map[string]deliveries.Lane{}
	for _, i := range handed {
		c := claimed[i]
		res.Handed = append(res.Handed, HandedOver{DeliveryID: c.ID, Attempt: c.Attempt, WebhookID: c.Webhook.ID, By: by})
		slow[c.Webhook.ID] = deliveries.Lane{SubscriptionID: c.Webhook.ID, AccountID: c.Webhook.AccountID, Route: deliveries.RouteOwn}
	}
	ids := make([]string, 0, len(slow))
	for id := range slow {
		ids = append(ids, id)
	}
	moved, err := a.deps.Store.SetRoute(ctx, deliveries.RouteChange{
		IDs: ids, From: []string{deliveries.RouteShared}, To: deliveries.RouteOwn,
		Reason: fmt.Sprintf("an attempt took longer than %s", t.Patience),
	})
	if err != nil {
		return true, err
	}
	lanes := make([]deliveries.Lane, 0, len(moved))
	for _, m := range moved {
		res.Isolated = append(res.Isolated, m.SubscriptionID)
		lanes = append(lanes, m.Lane)
	}
	a.wakeOwnLanes(ctx, lanes)
	return true, nil
}

// recordHandedOver records the outcome of an attempt that outlived its
// round's patience, for a later round to report, trying until shortly
// before its claim's lease ends.
func (a *Activities) recordHandedOver(c deliveries.Claimed, rec deliveries.AttemptRecord, late pendingLate, leasedUntil time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), leasedUntil)
	defer cancel()
	if _, err := a.recordAndObserve(ctx, []deliveries.Claimed{c}, []deliveries.AttemptRecord{rec}, []pendingLate{late}, leasedUntil); err != nil {
		// The delivery is attempted again once its lease ends.
		a.deps.Logger.WarnContext(ctx, "cannot record a handed-over attempt", "delivery_id", c.ID, "error", err.Error())
	}
}

// reportHandedOver returns the recorded outcomes of handed-over attempts,
// those past their time as lost, and those still to report.
func (a *Activities) reportHandedOver(ctx context.Context, handed []HandedOver) (reported []Outcome, still []HandedOver, err error) {
	if len(handed) == 0 {
		return nil, nil, nil
	}
	refs := make([]deliveries.AttemptRef, len(handed))
	for i, h := range handed {
		refs[i] = deliveries.AttemptRef{DeliveryID: h.DeliveryID, Attempt: h.Attempt}
	}
	recorded, err := a.deps.Store.RecordedAttempts(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	found := make(map[deliveries.AttemptRef]deliveries.RecordedAttempt, len(recorded))
	for _, r := range recorded {
		found[r.AttemptRef] = r
	}
	now := a.deps.Now()
	for i, h := range handed {
		r, ok := found[refs[i]]
		switch {
		case ok:
			o := Outcome{DeliveryID: h.DeliveryID, Attempt: h.Attempt, Status: r.DeliveryStatus, StatusCode: r.StatusCode,
				Error: r.ErrorMessage, Duration: r.Duration}
			if !deliveries.IsFinal(r.DeliveryStatus) {
				o.RetryIn = r.RetryIn
			}
			reported = append(reported, o)
		case now.After(h.By):
			reported = append(reported, Outcome{DeliveryID: h.DeliveryID, Attempt: h.Attempt, Status: "lost",
				Error: "the outcome of this handed-over attempt was not recorded (its worker stopped); it is attempted again once its lease ends"})
		default:
			still = append(still, h)
		}
	}
	return reported, still, nil
}

// wakeOwnLanes starts (or wakes) the own lanes of webhooks; one that
// cannot be woken now is woken by the sweeper.
func (a *Activities) wakeOwnLanes(ctx context.Context, lanes []deliveries.Lane) {
	if a.deps.Waker == nil || len(lanes) == 0 {
		return
	}
	for i := range lanes {
		lanes[i].Route = deliveries.RouteOwn
	}
	if err := a.deps.Waker.WakeNow(ctx, lanes); err != nil {
		a.deps.Logger.WarnContext(ctx, "cannot start a webhook's own lane; the sweeper will", "error", err.Error())
	}
}

// pageOrder keeps per-run order inside a shared page: a run's
// job.run.completed or job.run.errored claimed with its job.run.started
// goes only once the started's attempt succeeded (or failed for good);
// otherwise it is not attempted, and is given back with what never
// started (the claim then defers it behind the started).
type pageOrder struct {
	waitsFor map[int]int           // completed index -> its started's index
	ends     map[int]chan struct{} // started index -> closed when its attempt ended
	status   []string              // each started's delivery status after its attempt
}

func newPageOrder(claimed []deliveries.Claimed) *pageOrder {
	o := &pageOrder{waitsFor: map[int]int{}, ends: map[int]chan struct{}{}, status: make([]string, len(claimed))}
	type runKey struct{ webhook, run string }
	started := map[runKey]int{}
	for i, c := range claimed {
		if c.RunID == "" {
			continue
		}
		k := runKey{c.Webhook.ID, c.RunID}
		if c.EventType == webhooks.EventRunStarted {
			if _, ok := started[k]; !ok {
				started[k] = i
			}
			continue
		}
		// Only a started before it in the page: the webhook's workers take
		// its attempts in page order, so the started is never behind it.
		if j, ok := started[k]; ok && j < i {
			o.waitsFor[i] = j
			if o.ends[j] == nil {
				o.ends[j] = make(chan struct{})
			}
		}
	}
	return o
}

// mayGo waits, for an attempt that follows its run's started in the
// page, until the started's attempt ended, and says whether it may go.
func (o *pageOrder) mayGo(ctx context.Context, i int) bool {
	j, ok := o.waitsFor[i]
	if !ok {
		return true
	}
	select {
	case <-o.ends[j]:
	case <-ctx.Done():
		return false
	}
	return o.status[j] == deliveries.StatusSucceeded || o.status[j] == deliveries.StatusFailed
}

// ended notes the end of attempt i ("" when it never started).
func (o *pageOrder) ended(i int, status string) {
	if ch, ok := o.ends[i]; ok {
		o.status[i] = status
		close(ch)
	}
}
