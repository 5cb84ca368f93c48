package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// handOverMargin is added to an attempt's deadline to bound when its
// outcome must be recorded.
const handOverMargin = 5 * time.Second

// run claims, starts and records until the round has claimed its limit
// or found nothing due for the linger, then starts what it queued, waits
// for what is in flight (at most the patience each) and gives back what
// never started.
func (p *pipeline) run(ctx context.Context) error {
	defer p.stop()
	t := p.rounds.tuning
	claiming := true
	start := p.rounds.now()
	claimAt := start // when to claim next
	lingerUntil := claimAt.Add(p.linger)
	poll := lingerPollFirst
	var claimEnded time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	if p.steady {
		p.promiseNow(ctx, start)
	}
	for {
		now := p.rounds.now()
		if claiming && !now.Before(claimAt) {
			n, err := p.claimMore(ctx)
			if err != nil {
				return p.abandon(ctx, err)
			}
			claimAt, poll, lingerUntil = p.nextClaim(n, poll, lingerUntil)
			p.promiseIfSteady(ctx, start, n)
			claiming = p.claimsOn(start, lingerUntil, n)
			if !claiming {
				claimEnded = p.rounds.now()
			}
		}
		if !claiming {
			// What it claimed still starts as its webhooks' room frees (or
			// goes back after queueWait): given back at once, another
			// claim would take it again.
			if len(p.queue) == 0 && (!p.anyWaiting() || p.rounds.now().Sub(claimEnded) >= queueWait) {
				p.stopStarting()
			}
			if p.busy() == 0 {
				break
			}
		}
		resetTimer(timer, p.nextWake(claiming, claimAt))
		select {
		case r := <-p.results:
			p.endAll(r)
			// Freed room calls for a claim only when the last one may have
			// left due deliveries behind; else new ones come from
			// ingestion, at the gather's pace (nextClaim).
			if claiming && p.pressed && p.room() >= t.PageSize/4 {
				claimAt = minTime(claimAt, p.rounds.now().Add(lingerPollFirst))
			}
		case <-p.rec.due:
			if err := p.rec.flush(ctx); err != nil {
				return p.abandon(ctx, err)
			}
			p.reportLimitsAsItGoes(ctx)
		case <-timer.C:
		case <-ctx.Done():
			return p.abandon(ctx, ctx.Err())
		}
		if len(p.rec.records) >= t.PageSize { // a full group goes at once
			if err := p.rec.flush(ctx); err != nil {
				return p.abandon(ctx, err)
			}
		}
		if err := p.handOverSlow(ctx); err != nil {
			return p.abandon(ctx, err)
		}
		p.startQueued()
		p.releaseGiveBacks(ctx)
	}
	if err := p.rec.flush(ctx); err != nil {
		return p.abandon(ctx, err)
	}
	p.giveBackNotStarted(ctx)
	p.wakes.Wait()
	return nil
}

// endAll takes r and the results already waiting behind it, so a round
// that is busy takes its answers in batches.
func (p *pipeline) endAll(r *flightResult) {
	p.end(r)
	for {
		select {
		case r := <-p.results:
			p.end(r)
		default:
			return
		}
	}
}

// nextClaim says when to claim again after a claim that took n: at once
// after a quarter page or more (a backlog), after a short gather after a
// smaller one (a trickle costs a claim per few milliseconds, not per
// event), and at a growing poll while nothing is due. A claim that took
// nothing and held back what it saw (pressed: every room it could take
// from is full) is followed by the next after the longest poll: answers
// that free room call for a claim at once (run), and until then a claim
// can find only the deliveries of webhooks and destinations the round
// has not seen, which an idle round finds at that pace too. (At 200 ms
// receivers a spread burst's round polled five or six times a round
// trip, 6-15 ms of PostgreSQL each, to find nothing.)
func (p *pipeline) nextClaim(n int, poll time.Duration, lingerUntil time.Time) (time.Time, time.Duration, time.Time) {
	now := p.rounds.now()
	switch {
	case n >= p.rounds.tuning.PageSize/4:
		return now, lingerPollFirst, now.Add(p.linger)
	case n > 0:
		return now.Add(poll), min(2*poll, p.rounds.tuning.ClaimGather), now.Add(p.linger)
	case p.pressed:
		return now.Add(lingerPollMax), poll, lingerUntil
	default:
		return now.Add(poll), min(2*poll, lingerPollMax), lingerUntil
	}
}

// nextWake is when the loop must look again without a result: the next
// claim, the next attempt to reach the patience, a queued delivery's wait.
func (p *pipeline) nextWake(claiming bool, claimAt time.Time) time.Duration {
	now := p.rounds.now()
	next := now.Add(time.Second)
	if claiming {
		next = minTime(next, claimAt)
	}
	if patience := p.rounds.answers.patienceAt(p.patience, now); patience > 0 {
		p.mu.Lock()
		for _, f := range p.flights {
			if f.state == attemptStarted {
				next = minTime(next, f.startedAt.Add(patience))
			}
		}
		p.mu.Unlock()
	}
	if len(p.queue) > 0 {
		next = minTime(next, now.Add(lingerPollMax))
	}
	return max(next.Sub(now), 0)
}

// handOverSlow hands over the attempts running longer than the patience
// (as it follows the worker's recent answers, patience.go): they record
// themselves, a later round reports them, and their webhooks move to
// lanes of their own so no shared round waits on them again.
func (p *pipeline) handOverSlow(ctx context.Context) error {
	now := p.rounds.now()
	patience := p.rounds.answers.patienceAt(p.patience, now)
	if patience <= 0 {
		return nil
	}
	slow := map[string]deliveries.RoutedWebhook{}
	p.mu.Lock()
	for s, f := range p.flights {
		if f.state != attemptStarted || f.reported || now.Sub(f.startedAt) < patience {
			continue
		}
		f.state, f.wakesLane = attemptHanded, true
		p.rounds.laneWakes.handed(f.c.Webhook.ID)
		delete(p.flights, s)
		w := f.c.Webhook
		p.handed = append(p.handed, HandedOver{DeliveryID: f.c.ID, Attempt: f.c.Attempt, WebhookID: w.ID,
			By: now.Add(p.rounds.attemptTimeout + handOverMargin)})
		slow[w.ID] = deliveries.RoutedWebhook{SubscriptionID: w.ID, AccountID: w.AccountID, Route: deliveries.RouteOwn}
	}
	p.mu.Unlock()
	if len(slow) == 0 {
		return nil
	}
	ids := make([]string, 0, len(slow))
	for id := range slow {
		ids = append(ids, id)
	}
	sctx, cancel := context.WithTimeout(ctx, recordInline) // the round's loop waits here
	defer cancel()
	moved, err := p.rounds.store.SetRoute(sctx, deliveries.RouteChange{
		IDs: ids, From: []string{deliveries.RouteShared}, To: deliveries.RouteOwn,
		Reason: fmt.Sprintf("an attempt took longer than %s", patience.Round(time.Millisecond)),
	})
	if err != nil {
		return err
	}
	owned := make([]deliveries.RoutedWebhook, 0, len(moved))
	for _, m := range moved {
		p.isolated = append(p.isolated, m.SubscriptionID)
		owned = append(owned, m.RoutedWebhook)
	}
	p.wakeOwnLanes(ctx, p.rounds.laneWakes.movedNow(owned))
	return nil
}

// abandon ends a round that cannot go on (its database is away, or its
// context ended): nothing more starts; what is in flight is handed over
// and records itself (or comes back when its lease ends), and so do the
// outcomes gathered and not written yet.
func (p *pipeline) abandon(ctx context.Context, err error) error {
	p.rec.handOver(ctx)         // what was answered and gathered is recorded all the same
	for _, s := range p.queue { // never launched: given back with the rest
		p.notStarted(s)
	}
	p.queue = nil
	p.rounds.releaseOutside(p.giveBack...)
	p.giveBack = nil
	p.mu.Lock()
	p.stopped = true
	for _, f := range p.flights {
		if f.permit != nil && !f.reported { // launched: its goroutine frees the permit
			f.state = attemptHanded
		}
	}
	p.mu.Unlock()
	p.stop()
	for { // results sent before: recorded as handed over
		select {
		case r := <-p.results:
			if f, ok := p.flights[r.seq]; ok {
				if r.rec.Status != "" {
					p.rounds.handed.add(handedWrite{c: f.c, rec: r.rec, late: r.late, leasedUntil: f.leasedUntil})
				}
			}
		default:
			return err
		}
	}
}

// anyWaiting says whether an attempt that left the queue is still
// waiting for a worker slot.
func (p *pipeline) anyWaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.flights {
		if f.permit != nil && f.state == attemptWaiting && !f.reported {
			return true
		}
	}
	return false
}

// stopStarting ends the round's starts: queued deliveries and those
// waiting for a worker slot never start (they are given back); what has
// started runs on.
func (p *pipeline) stopStarting() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.stop()
	for _, s := range p.queue {
		p.notStarted(s)
	}
	p.queue = nil
}

// giveBackNotStarted gives back what never started: due again at once,
// its attempt not counted.
func (p *pipeline) giveBackNotStarted(ctx context.Context) {
	p.stopStarting()
	p.releaseGiveBacks(ctx)
}

// releaseGiveBacks gives back at once what the round will not start,
// while its claim's lease holds: released at the round's end, a lease
// could have ended and the delivery been claimed again, sent, and its
// attempt counted twice.
func (p *pipeline) releaseGiveBacks(ctx context.Context) {
	if len(p.giveBack) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, releaseWithin)
	defer cancel()
	if _, err := p.rounds.store.ReleaseClaims(rctx, p.giveBack); err != nil {
		// They come back when their lease ends; their attempt counted.
		p.rounds.logger.WarnContext(ctx, "cannot give back deliveries a round did not attempt", "error", err.Error())
	}
	for _, l := range p.giveBack {
		p.gaveBack = append(p.gaveBack, l.DeliveryID)
	}
	p.giveBack = p.giveBack[:0]
}

// releaseWithin bounds a release of claims: past it, they come back when
// their leases end.
const releaseWithin = 2 * time.Second

// releaseOutside gives back a claim outside any round's loop (an attempt
// handed over that did not start after all, a round that gave up).
func (rs *Rounds) releaseOutside(leases ...deliveries.Lease) {
	if len(leases) == 0 {
		return
	}
	rs.outstanding.Add(1)
	go func() {
		defer rs.outstanding.Done()
		ctx, cancel := context.WithTimeout(context.Background(), releaseWithin)
		defer cancel()
		if _, err := rs.store.ReleaseClaims(ctx, leases); err != nil {
			rs.logger.WarnContext(ctx, "cannot give back deliveries that were not attempted; they come back when their leases end",
				"deliveries", len(leases), "error", err.Error())
		}
	}()
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// steadyAfter is how long a round must have gone on claiming, its last
// claim finding work, before it promises to claim (pipeline.promise): a
// round woken by a trickle ends after its linger and promises nothing;
// one that traffic keeps busy stops the API's wake-ups within this.
const steadyAfter = 250 * time.Millisecond

// promiseIfSteady makes the round's promise to claim once it has claimed
// for steadyAfter and its last claim, which took n, found work.
func (p *pipeline) promiseIfSteady(ctx context.Context, start time.Time, n int) {
	if n > 0 && p.rounds.now().Sub(start) >= steadyAfter {
		p.promiseNow(ctx, start)
	}
}

// promiseNow promises that the round, which started at start, claims for
// the rest of its claimFor; once a round.
func (p *pipeline) promiseNow(ctx context.Context, start time.Time) {
	if p.promise == nil || p.claimFor <= 0 {
		return
	}
	if d := start.Add(p.claimFor).Sub(p.rounds.now()); d > steadyAfter {
		if until := p.promise(ctx, d); until.After(p.claimsUntil) {
			p.claimsUntil = until
		}
	}
	p.promise = nil
}

// claimsOn says whether a round that started at start goes on claiming
// after a claim that took n: within its window while it finds work, has
// work in flight, lingers or has promised to claim (claimsUntil). A round
// that has claimed its limit stops, promise or not: the shard's next round
// keeps the promise (keepPromise).
func (p *pipeline) claimsOn(start, lingerUntil time.Time, n int) bool {
	now := p.rounds.now()
	return p.mayClaim(start) && (n > 0 || p.busy() > 0 || now.Before(lingerUntil) || now.Before(p.claimsUntil))
}

// mayClaim says whether a round that started at start may claim again:
// below its limit of attempts and within its claimFor.
func (p *pipeline) mayClaim(start time.Time) bool {
	if p.attempted >= p.limit {
		return false
	}
	return p.claimFor <= 0 || p.rounds.now().Sub(start) < p.claimFor
}
