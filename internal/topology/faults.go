package topology

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// FaultKind is one kind of fault the chaos run injects.
type FaultKind string

const (
	FaultWorkerKill     FaultKind = "worker SIGKILL, restart"
	FaultAPIKill        FaultKind = "API SIGKILL, restart"
	FaultTemporalKill   FaultKind = "Temporal server SIGKILL, restart"
	FaultDatabaseCut    FaultKind = "app database connections cut"
	FaultDatabaseOutage FaultKind = "long app database outage"
	FaultReceiver5xx    FaultKind = "receivers answer 5xx"
	FaultReceiverHang   FaultKind = "receivers hang past the timeout"
	FaultReceiver429    FaultKind = "receivers answer 429 + Retry-After"
	FaultReceiverSlow   FaultKind = "receivers answer slowly"
	// FaultReceiverHostile: receivers answer with HostileAnswers in turn.
	FaultReceiverHostile FaultKind = "receivers answer hostile bodies and headers"
	FaultDeactivate      FaultKind = "webhook deactivated, reactivated"
	FaultRotateSecret    FaultKind = "secret rotated in flight"
)

// FaultKinds lists every kind, in the order reports show them.
var FaultKinds = []FaultKind{
	FaultWorkerKill, FaultAPIKill, FaultTemporalKill, FaultDatabaseCut, FaultDatabaseOutage,
	FaultReceiver5xx, FaultReceiverHang, FaultReceiver429, FaultReceiverSlow, FaultReceiverHostile, FaultDeactivate, FaultRotateSecret,
}

// ReceiverMode is the answer a receiver fault makes its webhooks give.
func (k FaultKind) ReceiverMode() (ReceiverMode, bool) {
	switch k {
	case FaultReceiver5xx:
		return Answer5xx, true
	case FaultReceiverHang:
		return AnswerHang, true
	case FaultReceiver429:
		return Answer429, true
	case FaultReceiverSlow:
		return AnswerSlowly, true
	case FaultReceiverHostile:
		return AnswerHostile, true
	}
	return AnswerOK, false
}

// FaultStep is one fault of a track: wait Gap, then inject Kind on Target
// (a worker's or webhook's index, modulo how many there are) for Hold.
type FaultStep struct {
	Kind   FaultKind
	Gap    time.Duration
	Hold   time.Duration
	Target int
	Width  int // receiver faults: how many webhooks, from Target on
}

// FaultPlan is the schedule of a chaos run: three tracks that run at the
// same time, each step after the last. Infrastructure (processes and the
// database) and webhook operations (deactivation, rotation) and receivers'
// answers. The same seed gives the same plan.
type FaultPlan struct {
	Infra, Operations, Receivers []FaultStep
}

// NewFaultPlan lays out faults for a run of length d from seed: each track
// takes its kinds in shuffled rounds, so every kind recurs, until the
// track's steps fill d. One long database outage of outage starts in the
// infrastructure track once a third of d has passed.
func NewFaultPlan(seed uint64, d, outage time.Duration) FaultPlan {
	rnd := rand.New(rand.NewPCG(seed, 0x6a6f62686f6f6b73))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1)) }
	track := func(kinds []FaultKind, step func(FaultKind) FaultStep, long *FaultStep) []FaultStep {
		var steps []FaultStep
		var at time.Duration
		for at < d {
			order := append([]FaultKind(nil), kinds...)
			rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, k := range order {
				if long != nil && at >= d/3 {
					steps = append(steps, *long)
					at += long.Gap + long.Hold
					long = nil
				}
				s := step(k)
				steps = append(steps, s)
				at += s.Gap + s.Hold
			}
		}
		return steps
	}
	var p FaultPlan
	p.Infra = track([]FaultKind{FaultWorkerKill, FaultAPIKill, FaultTemporalKill, FaultDatabaseCut}, func(k FaultKind) FaultStep {
		s := FaultStep{Kind: k, Gap: between(4*time.Second, 15*time.Second), Target: rnd.IntN(1 << 16)}
		switch k {
		case FaultTemporalKill:
			s.Hold = between(3*time.Second, 10*time.Second) // down
		case FaultDatabaseCut:
			s.Hold = between(5*time.Second, 15*time.Second)
		default:
			s.Hold = between(time.Second, 5*time.Second) // until the restart
		}
		return s
	}, &FaultStep{Kind: FaultDatabaseOutage, Gap: 5 * time.Second, Hold: outage})
	p.Operations = track([]FaultKind{FaultDeactivate, FaultRotateSecret}, func(k FaultKind) FaultStep {
		s := FaultStep{Kind: k, Gap: between(3*time.Second, 12*time.Second), Target: rnd.IntN(1 << 16)}
		if k == FaultDeactivate {
			s.Hold = between(4*time.Second, 15*time.Second)
		}
		return s
	}, nil)
	p.Receivers = track([]FaultKind{FaultReceiver5xx, FaultReceiverHang, FaultReceiver429, FaultReceiverSlow, FaultReceiverHostile}, func(k FaultKind) FaultStep {
		return FaultStep{Kind: k, Gap: between(2*time.Second, 8*time.Second), Hold: between(6*time.Second, 20*time.Second),
			Target: rnd.IntN(1 << 16), Width: 1 + rnd.IntN(3)}
	}, nil)
	return p
}

// CutDatabase keeps cutting every connection to one database for hold:
// it ends them all (pg_terminate_backend) every cutEvery, so a client that
// reconnects gets at most a few milliseconds before it loses the
// connection again. adminURL must name another database of the same
// server; the rest of the cluster is untouched. (ALTER DATABASE ...
// ALLOW_CONNECTIONS false would shut the door completely, but on a server
// shared with other test runs a database that refuses connections looks
// abandoned to their housekeeping.)
func CutDatabase(ctx context.Context, adminURL, database string, hold time.Duration) (terminated int, err error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return 0, fmt.Errorf("cut %s: %w", database, err)
	}
	defer conn.Close(context.Background())
	until := time.Now().Add(hold)
	for {
		var n int
		var exists bool
		err := conn.QueryRow(ctx, `SELECT
			(SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()),
			EXISTS (SELECT FROM pg_database WHERE datname = $1)`, database).Scan(&n, &exists)
		if err != nil {
			return terminated, fmt.Errorf("cut %s: %w", database, err)
		}
		if !exists {
			return terminated, fmt.Errorf("cut %s: the database is gone (dropped by someone else)", database)
		}
		terminated += n
		if !time.Now().Before(until) {
			return terminated, nil
		}
		select {
		case <-ctx.Done():
			return terminated, nil
		case <-time.After(min(cutEvery, time.Until(until))):
		}
	}
}

// cutEvery is how often CutDatabase ends the connections.
const cutEvery = 20 * time.Millisecond
