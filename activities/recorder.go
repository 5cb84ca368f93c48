package activities

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// recordGather is how long the first outcome of a group waits for others
// before the group is written: a round's outcomes are recorded a few
// milliseconds after their answers, not when its slowest attempt ends.
// What a worker holds unwritten when it dies is sent again (same id and
// bytes), so this bounds the duplicates a killed worker causes; answers
// that all arrive within it are still one write.
const recordGather = 5 * time.Millisecond

// recordInline bounds how long a round's loop waits on the write of a
// group of outcomes before it gives up and hands the group over: every
// other delivery of its shard waits meanwhile.
const recordInline = 3 * time.Second

// outcomeRecorder records a round's attempt outcomes in groups as they
// arrive. It is used by one goroutine, the round's (pipeline.run).
type outcomeRecorder struct {
	until time.Time // the writes are tried again until shortly before then
	// outstanding counts the writes handed over when the round gives up
	// (Rounds.outstanding: Drain waits for them).
	outstanding *sync.WaitGroup
	logger      *slog.Logger
	// gather is how long a group's first outcome waits (recordGather).
	gather time.Duration
	// write records a group (outcomeWriter.write; tests replace it).
	write func(ctx context.Context, claimed []deliveries.Claimed, records []deliveries.AttemptRecord, lates []pendingLate, until time.Time) ([]Outcome, error)
	// keep holds what write gave up on (outcomeWriter.keep).
	keep func(claimed []deliveries.Claimed, records []deliveries.AttemptRecord)

	claimed []deliveries.Claimed
	records []deliveries.AttemptRecord
	lates   []pendingLate
	// due fires when the group gathered so far must be written; nil while
	// there is none.
	due   <-chan time.Time
	timer *time.Timer

	outcomes []Outcome // of what was written
	written  int
}

func newOutcomeRecorder(rs *Rounds, until time.Time) *outcomeRecorder {
	return &outcomeRecorder{until: until, gather: recordGather, write: rs.outcomes.write, keep: rs.outcomes.keep,
		outstanding: &rs.outstanding, logger: rs.logger}
}

// add gathers one attempt's outcome for the next write.
func (r *outcomeRecorder) add(c deliveries.Claimed, rec deliveries.AttemptRecord, late pendingLate) {
	r.claimed = append(r.claimed, c)
	r.records = append(r.records, rec)
	r.lates = append(r.lates, late)
	if r.due == nil {
		r.timer = time.NewTimer(r.gather)
		r.due = r.timer.C
	}
}

// flush writes what was gathered (nothing when nothing was).
func (r *outcomeRecorder) flush(ctx context.Context) error {
	if r.timer != nil {
		r.timer.Stop()
		r.timer, r.due = nil, nil
	}
	if len(r.records) == 0 {
		return nil
	}
	// The round's own goroutine waits here: while the database is away it
	// tries for a few seconds only, then gives up the round, which hands
	// this group over (handOver) to be tried until r.until.
	outcomes, err := r.write(ctx, r.claimed, r.records, r.lates, minTime(r.until, time.Now().Add(recordInline)))
	if err != nil {
		return err
	}
	r.outcomes = append(r.outcomes, outcomes...)
	r.written += len(r.records)
	r.claimed, r.records, r.lates = nil, nil, nil
	return nil
}

// gathered counts the outcomes added, written or not.
func (r *outcomeRecorder) gathered() int { return r.written + len(r.records) }

// handOver writes what was gathered outside the round, which is giving up
// (a claim failed, its context ended): the outcomes are not lost with it.
// Left unwritten, their deliveries would be sent again once their leases
// end. The write is tried until the earliest of their leases ends, and
// what it could not write then is kept (keptOutcomes), where the next
// claim of such a delivery finds it: tried on until the round's deadline
// (ten minutes), the outcomes stayed out of sight of the rounds that
// followed, which claimed and sent them again once the leases ended (chaos
// seed 11: seven deliveries answered 200 as a database outage began, sent
// again 50 s later). Like an attempt handed over, the write may outlast
// the round.
func (r *outcomeRecorder) handOver(ctx context.Context) {
	if r.timer != nil {
		r.timer.Stop()
		r.timer, r.due = nil, nil
	}
	if len(r.records) == 0 {
		return
	}
	claimed, records, lates := r.claimed, r.records, r.lates
	r.claimed, r.records, r.lates = nil, nil, nil
	r.outstanding.Add(1)
	go func() {
		defer r.outstanding.Done()
		if _, err := r.write(context.WithoutCancel(ctx), claimed, records, lates, leasesEnd(claimed, r.until)); err != nil {
			r.logger.WarnContext(ctx, "cannot record the outcomes of a round that gave up before their leases end; the worker keeps them",
				"attempts", len(records), "error", err.Error())
			r.keep(claimed, records)
		}
	}()
}

// leasesEnd is when the earliest of the claims' leases ends, at the latest
// until (a claim without a lease: until).
func leasesEnd(claimed []deliveries.Claimed, until time.Time) time.Time {
	for _, c := range claimed {
		if !c.LeasedUntil.IsZero() {
			until = minTime(until, c.LeasedUntil)
		}
	}
	return until
}
