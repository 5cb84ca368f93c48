package activities

import (
	"context"
	"iter"
	"maps"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// sharedRoundLimit bounds the attempts of one shard round: its marker in
// the history holds each one's outcome (about 120 bytes for a success, a
// few hundred at most: outcomeErrorMax), about 250 KB typical and under
// 1.5 MiB at worst of the 2 MB Temporal takes in one history event
// (TestOutcome_ARoundsMarkerIsBounded). A round at its bound stops
// claiming and waits for its last answers before the next round claims:
// one receiver round trip lost per bound, so the bound is as high as the
// marker allows (1,000 held a 2,000-event burst to 200 ms receivers
// 0.2-0.6 s longer than 2,000).
const sharedRoundLimit = 2000

// pipeline runs a round's attempts as they may go (a shard round's; a
// lane's page, with no patience and no linger): it claims what may start
// now (bounded by the round's free slots and each webhook's and
// destination's room under its in-flight limit), starts each claimed
// attempt at once, records outcomes in small groups as they arrive, and
// claims again as attempts end. No attempt waits for another one's receiver, so a round's
// cost follows its deliveries, not its receivers' latency. An attempt
// that outlasts the patience is handed over (it records itself) and its
// webhook moves to a lane of its own.
//
// One goroutine, the round's, runs the loop and owns every field but
// flights' states, which the attempt goroutines read under mu.
type pipeline struct {
	rounds *Rounds
	claim  claimFunc
	rec    *outcomeRecorder
	// slots bounds the attempts in flight and queued in this round.
	slots int
	// limit bounds the attempts one round claims (its marker's size).
	limit int
	// patience is how long an attempt may run before it is handed over
	// and its webhook moves to a lane of its own (0: never; a lane waits).
	patience time.Duration
	// linger is how long the round looks for newly due deliveries after
	// a claim found none.
	linger time.Duration
	// claimFor bounds how long the round claims (0: no bound); then it
	// ends once what it claimed has ended or been handed over.
	claimFor time.Duration
	// claimsUntil is when the round's promise to claim ends (a shard's
	// round, promiseClaims): it claims, or polls, until then whatever it
	// finds.
	claimsUntil time.Time
	// promise, when set, promises to claim for d and returns until when
	// (a shard's round): the round promises the rest of its claimFor once
	// it has found work steadily, or at once when steady
	// (promiseIfSteady).
	promise func(ctx context.Context, d time.Duration) time.Time
	steady  bool

	// results carries attempts' ends to the round, as pointers: its buffer
	// (a slot for every flight) is made for each round.
	results chan *flightResult
	// stopCtx ends when the round stops starting attempts: those still
	// waiting for a worker slot then never start.
	stopCtx context.Context
	stop    context.CancelFunc

	mu      sync.Mutex
	flights map[int]*flight // claimed and not ended, by sequence number
	stopped bool

	// wakes are the round's wake-ups of own lanes still under way.
	wakes sync.WaitGroup

	queue     []int                         // claimed, waiting for their webhook's room, oldest first
	seen      map[string]webhookDestination // webhooks claimed this round: their destinations, worked out once
	seq       int
	attempted int
	giveBack  []deliveries.Lease // claimed and never started, to release (releaseGiveBacks)
	gaveBack  []string           // the deliveries it gave back (released or tried to)
	handed    []HandedOver
	isolated  []string
	ended     int
	// pressed: the last claim may have left due deliveries behind (it took
	// all it asked for, or the claim held some back for a room, the page
	// or a full window), so answers that free room call for the next claim
	// at once (run); else new ones come at the gather's pace.
	pressed bool
	// limitsReportedAt: when the round last reported its webhooks'
	// in-flight limits (reportLimitsAsItGoes).
	limitsReportedAt time.Time
}

// claimFunc claims at most n due deliveries, each webhook and destination
// at most its room (those not in rooms: the claim's default).
type claimFunc func(ctx context.Context, n int, rooms claimRooms) (deliveries.ClaimedPage, error)

// claimRooms is how many more attempts may start now to the webhooks and
// destinations (by deliveries.DestinationKey) the round has in flight.
type claimRooms struct {
	webhooks     map[string]int
	destinations map[string]int
}

// webhookDestination is a webhook's destination (deliveries.DestinationKey:
// the worker's limiter and the claim name it alike) and the client_url it
// was worked out from.
type webhookDestination struct{ clientURL, key string }

// flight is one claimed delivery of the round, from its claim to its end.
type flight struct {
	c           deliveries.Claimed
	sign        signer
	order       *pageOrder
	at          int       // its index in order's page
	queuedAt    time.Time // when its claim answered and it joined the queue
	leasedUntil time.Time
	permit      attemptPermit // nil while queued
	state       attemptState
	startedAt   time.Time
	// reported: its end is on its way to the round (in results), so it
	// is not handed over any more.
	reported bool
	// wakesLane: handed over as slow, its end may wake its webhook's own
	// lane (laneWakes).
	wakesLane bool
}

// flightResult is an attempt's end as its goroutine reports it.
type flightResult struct {
	seq  int
	rec  deliveries.AttemptRecord
	late pendingLate
}

// attemptState is where one claimed delivery of a round stands.
type attemptState int

const (
	attemptWaiting    attemptState = iota // queued, or for a worker slot
	attemptStarted                        // sent, no answer yet
	attemptHanded                         // outlasted the patience: records itself
	attemptNotStarted                     // the round stopped, or its lease ran short, first
)

// queueWait bounds how long a claimed delivery waits for its webhook's
// room before it is given back (uncounted) for a later claim.
const queueWait = time.Second

func (rs *Rounds) newPipeline(ctx context.Context, claim claimFunc, recordUntil time.Time) *pipeline {
	stopCtx, stop := context.WithCancel(ctx)
	slots := max(rs.attempts.Size(), rs.tuning.PageSize)
	return &pipeline{
		rounds: rs, claim: claim, rec: newOutcomeRecorder(rs, recordUntil), slots: slots, limit: sharedRoundLimit,
		patience: rs.tuning.Patience, linger: rs.tuning.Linger,
		results: make(chan *flightResult, slots), stopCtx: stopCtx, stop: stop, flights: map[int]*flight{}, seen: map[string]webhookDestination{},
		limitsReportedAt: rs.now(),
	}
}

// sharedRoundClaimFor bounds how long a shard's round claims. A round is
// a local activity, run inside its shard's workflow task: one that ran for
// the workflow task's timeout (10 s) would heartbeat the task, and on a
// busy box those heartbeats failed ("Workflow task not found") and the
// round ran again on another worker. With steady traffic a shard always
// has something due, so without this a round lasted until it had claimed
// sharedRoundLimit. Ending after this (plus the patience and the record of
// its last outcomes) costs a workflow task and a marker every few seconds.
const sharedRoundClaimFor = 3 * time.Second

// limitsReportEvery is how often a long round reports its webhooks'
// in-flight limits as it goes (the health object, the metrics); a round
// always reports them at its end. A shard's round claims for at most
// sharedRoundClaimFor, but a lane's waits for a slow receiver's every
// wave (up to DELIVERY_TIMEOUT each): a receiver that starts refusing
// shrinks its limit mid-round.
const limitsReportEvery = 5 * time.Second

// destinations are the destinations of the webhooks claimed this round,
// each once.
func (p *pipeline) destinations() iter.Seq[string] {
	return func(yield func(string) bool) {
		done := make(map[string]bool, len(p.seen))
		for _, d := range p.seen {
			if !done[d.key] {
				done[d.key] = true
				if !yield(d.key) {
					return
				}
			}
		}
	}
}

// reportLimitsAsItGoes reports the round's webhooks' limits when the last
// report is limitsReportEvery old.
func (p *pipeline) reportLimitsAsItGoes(ctx context.Context) {
	if now := p.rounds.now(); now.Sub(p.limitsReportedAt) >= limitsReportEvery {
		p.limitsReportedAt = now
		p.rounds.reportLimits(ctx, maps.Keys(p.seen))
	}
}

// busy counts the round's claimed deliveries not ended yet.
func (p *pipeline) busy() int { return len(p.flights) }

// room is how many more deliveries the round may claim now.
func (p *pipeline) room() int {
	if p.attempted >= p.limit {
		return 0
	}
	return min(p.rounds.tuning.PageSize, p.slots-p.busy(), p.limit-p.attempted)
}

// rooms is, for each webhook and destination the round has claimed
// deliveries of, how many more may start now, plus what its receiver's
// answers would free within claimAhead (a receiver that answers in a
// millisecond frees its limit many times over before the next claim): the
// claim takes only what may go at once or within claimAhead, so nothing
// waits long in the round and nothing is claimed only to be given back.
//
// A webhook with nothing in the round whose room is the claim's default
// (the initial limit) is left out: the claim joins every candidate with
// these lists, and a round of spread or skewed traffic has seen a
// thousand webhooks, most of them quiet again. One whose limit has grown
// is listed though nothing of it is in the round: left to the default, a
// busy webhook behind a receiver that answers at once (its claimed
// attempts all ended before the next claim) was claimed 16 at a time, a
// claim every 10 ms, whatever its limit (2,000 events to one webhook in
// 1.4 s in half the runs, 0.65 s in the others; docs/performance.md, "One
// webhook's ramp"). Every destination the round has seen is listed
// likewise when its room is not the default, whatever its webhooks': a
// spread burst's webhooks are each new and quiet once answered, and their
// destination, left out with them, was claimed 16 at a time whatever its
// grown limit (2,000 events to 2,000 webhooks in 1.8-2.0 s in a third of
// the runs, 0.6 s in the others), or past its room when it had shrunk.
func (p *pipeline) rooms() claimRooms {
	queued := map[string]int{}
	queuedTo := map[string]int{}
	for _, s := range p.queue {
		id := p.flights[s].c.Webhook.ID
		queued[id]++
		queuedTo[p.seen[id].key]++
	}
	inRound := make(map[string]bool, len(p.flights))
	for _, f := range p.flights {
		inRound[f.c.Webhook.ID] = true
	}
	initial := p.rounds.limits.initial()
	r := claimRooms{webhooks: map[string]int{}, destinations: map[string]int{}}
	ahead := map[string]int{} // every destination seen: the most its listed webhooks free ahead
	for id, d := range p.seen {
		if _, ok := ahead[d.key]; !ok {
			ahead[d.key] = 0
		}
		room := p.rounds.limits.room(id, d.key)
		if !inRound[id] && room == initial {
			continue
		}
		more := p.rounds.limits.ahead(id)
		r.webhooks[id] = max(room+more-queued[id], 0)
		ahead[d.key] = max(ahead[d.key], more)
	}
	for dest, more := range ahead {
		if room := max(p.rounds.limits.destinationRoom(dest)-queuedTo[dest]+more, 0); room != initial {
			r.destinations[dest] = room
		}
	}
	return r
}

// claimMore claims what may go now and starts it; it returns how many it
// claimed.
func (p *pipeline) claimMore(ctx context.Context) (int, error) {
	n := p.room()
	if n <= 0 {
		return 0, nil
	}
	// The claim's lease starts when its statement does (now() in the
	// database, no earlier than its send, after any wait for a
	// connection): a lease counted from the answer would outlast the
	// database's by as long as the claim took, and one counted from before
	// the wait would end early and send more attempts through the fence.
	claimedAt := p.rounds.now()
	page, err := p.claim(ctx, n, p.rooms())
	if err != nil {
		return 0, err
	}
	claimedAt = claimedAt.Add(page.ConnectionWait)
	p.pressed = page.More || len(page.Claimed) >= n
	p.ended += len(page.Ended)
	p.wakeOwnLanes(ctx, page.MovedToOwn)
	p.add(ctx, page.Claimed, claimedAt)
	p.startQueued()
	return len(page.Claimed), nil
}

// add queues a page claimed at claimedAt (when its statement was sent),
// in page order.
func (p *pipeline) add(ctx context.Context, claimed []deliveries.Claimed, claimedAt time.Time) {
	now := p.rounds.now()
	leasedUntil := claimedAt.Add(p.rounds.attemptTimeout + leaseSlack)
	order := newPageOrder(claimed)
	signers := map[string]signer{}
	kept := p.rounds.outcomes.anyKept()
	for i, c := range claimed {
		if kept {
			if o, ok := p.rounds.outcomes.takeKept(c.ID); ok {
				p.recordKept(ctx, c, o) // answered before: not sent again
				continue
			}
		}
		c.Webhook.ObservedAt = claimedAt // read by the claim, at this or later
		if d, ok := p.seen[c.Webhook.ID]; !ok || d.clientURL != c.Webhook.ClientURL {
			p.seen[c.Webhook.ID] = webhookDestination{clientURL: c.Webhook.ClientURL, key: destinationOf(c.Webhook)}
		}
		sign, ok := signers[c.Webhook.ID]
		if !ok {
			sign = p.rounds.send.signer(ctx, c.Webhook)
			signers[c.Webhook.ID] = sign
		}
		p.seq++
		p.flights[p.seq] = &flight{c: c, sign: sign, order: order, at: i, queuedAt: now, leasedUntil: leasedUntil}
		p.queue = append(p.queue, p.seq)
	}
	p.attempted += len(claimed)
}

// startQueued starts the queued deliveries whose webhook and destination
// have room, oldest first; those that waited queueWait are given back.
// A webhook refused once is not asked again in the same pass: a busy
// webhook's queue of hundreds cost a limiter call each on every answer.
func (p *pipeline) startQueued() {
	if len(p.queue) == 0 {
		return
	}
	now := p.rounds.now()
	rest := p.queue[:0]
	full := map[string]bool{}
	for _, s := range p.queue {
		f := p.flights[s]
		w := f.c.Webhook
		var permit attemptPermit
		ok := false
		if !full[w.ID] {
			permit, ok = p.rounds.limits.tryStart(w.ID, p.seen[w.ID].key)
			full[w.ID] = !ok
		}
		switch {
		case ok:
			f.permit = permit
			p.launch(s, f)
		case now.Sub(f.queuedAt) >= queueWait:
			p.notStarted(s)
		default:
			rest = append(rest, s)
		}
	}
	p.queue = rest
}

// launch starts one attempt on a goroutine of the worker's (sender.goroutines).
func (p *pipeline) launch(s int, f *flight) {
	p.rounds.outstanding.Add(1)
	p.rounds.send.goroutines.Go(func() {
		defer p.rounds.outstanding.Done()
		if !f.order.mayGo(p.stopCtx, f.at) {
			p.report(s, f, flightResult{seq: s}) // behind its run's started: given back
			return
		}
		// The request is not the round's: an attempt handed over runs to
		// its own deadline after the round has returned.
		rec, late := p.rounds.attemptClaimed(context.WithoutCancel(p.stopCtx), f.c, f.sign,
			&attemptGate{ctx: p.stopCtx, start: func() bool { return p.started(f) }})
		f.order.ended(f.at, rec.Status)
		p.report(s, f, flightResult{seq: s, rec: rec, late: late})
	})
}

// report frees an attempt's permit and hands its end to the round, or,
// when it was handed over (or its round gave up), records it here; one
// that never started comes back when its lease ends. The send never blocks
// (results has room for every flight) and happens under mu, so a round
// that gives up finds every result either sent or left to its goroutine.
func (p *pipeline) report(s int, f *flight, r flightResult) {
	f.permit.done(r.rec) // its place frees at once, however busy the round is
	p.mu.Lock()
	handed := f.state == attemptHanded
	if !handed {
		f.reported = true
		p.results <- &r
	}
	startedAt := f.startedAt
	p.mu.Unlock()
	if !handed && p.patience > 0 && r.rec.Status != "" {
		p.rounds.answers.add(p.rounds.now().Sub(startedAt))
	}
	if !handed {
		return
	}
	if r.rec.Status == "" { // it never started after all: its claim goes back
		p.rounds.releaseOutside(f.c.Lease())
		p.rounds.handed.wakeLanes([]handedWrite{{c: f.c, wakesLane: f.wakesLane}})
		return
	}
	p.rounds.handed.add(handedWrite{c: f.c, rec: r.rec, late: r.late, leasedUntil: f.leasedUntil, wakesLane: f.wakesLane})
}

// started is asked once an attempt holds its worker slot: it starts
// unless the round has stopped, or unless its claim's lease would end
// before the attempt's deadline (it waited that long for a slot): once the
// lease ends another round may claim the delivery, and both would send it.
// One that does not start is given back, its attempt not counted.
func (p *pipeline) started(f *flight) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.rounds.now()
	if p.stopped || now.Add(p.rounds.attemptTimeout).After(f.leasedUntil) {
		f.state = attemptNotStarted
		return false
	}
	f.state, f.startedAt = attemptStarted, now
	return true
}

// end takes an attempt's result: its outcome joins the next record; one
// that never started is given back.
func (p *pipeline) end(r *flightResult) {
	f, ok := p.flights[r.seq]
	if !ok {
		return // handed over meanwhile
	}
	delete(p.flights, r.seq)
	if r.rec.Status == "" {
		p.giveBack = append(p.giveBack, f.c.Lease())
		return
	}
	p.rec.add(f.c, r.rec, r.late)
}

// notStarted gives back a queued delivery.
func (p *pipeline) notStarted(s int) {
	p.giveBack = append(p.giveBack, p.flights[s].c.Lease())
	delete(p.flights, s)
}

// wakeWithin bounds a round's wake-up of its webhooks' own lanes; one not
// woken by then is woken by the sweeper.
const wakeWithin = 10 * time.Second

// wakeOwnLanes starts (or wakes) the own lanes of webhooks the round moved
// there, outside the round's loop: starting fifty lanes' workflows took
// the loop's time from every other delivery of the shard (another
// account's waited up to 0.5 s beside an account's 50 hung webhooks). The
// round waits for them before it returns (run).
func (p *pipeline) wakeOwnLanes(ctx context.Context, owned []deliveries.RoutedWebhook) {
	if len(owned) == 0 {
		return
	}
	p.rounds.outstanding.Add(1)
	p.wakes.Add(1)
	go func() {
		defer p.rounds.outstanding.Done()
		defer p.wakes.Done()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeWithin)
		defer cancel()
		p.rounds.wake.wakeOwnLanes(wctx, owned)
	}()
}
