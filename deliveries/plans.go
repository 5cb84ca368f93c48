package deliveries

import (
	"context"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// withIngestionPlans is withGenericIndexPlans for the ingestion statement,
// each of its statements bounded to 10 s on the server (UseIngestionPlans):
// the boundary's claims of event ids rely on that bound (migration 00036).
func (s *Store) withIngestionPlans(ctx context.Context, fn func(q *dbq.Queries) error) error {
	return s.inPlanMode(ctx, (*dbq.Queries).UseIngestionPlans, fn)
}

// withGenericIndexPlans runs fn's statement (one) with its generic plan,
// planned once per connection, rather than a plan made for each call's
// values, never compiled with JIT, and reading tables by their indexes:
// the settings and the statement go in one batch, one implicit transaction
// (pipelined), so the settings hold for that statement alone at the cost
// of one round trip.
//
// It is for the large statements of the hot path whose plan does not
// depend on their values (arrays of ids, a group's events): PostgreSQL
// keeps choosing a custom plan for them, because a generic plan cannot
// know an array's length, and planning one of them costs more than
// running it (IngestEvents: about 3.8 ms of planning to 2 ms of work on
// the topology bench; docs/performance.md). JIT is off because a generic
// plan's estimates (1,000 rows from each array) can pass jit_above_cost,
// and compiling the shared claim took 160 ms a call. Indexes, because a
// generic plan is kept until the next ANALYZE, and one made while
// webhook_deliveries was nearly empty (a new deployment's first claims)
// scanned it whole once it had grown.
func (s *Store) withGenericIndexPlans(ctx context.Context, fn func(q *dbq.Queries) error) error {
	return s.inPlanMode(ctx, (*dbq.Queries).UseGenericIndexPlans, fn)
}

// withGenericIndexPlansWaited is withGenericIndexPlans that also returns
// how long the statement waited for its connection before it was sent
// (a claim's leases count from its send).
func (s *Store) withGenericIndexPlansWaited(ctx context.Context, fn func(q *dbq.Queries) error) (time.Duration, error) {
	return s.inPlanModeWaited(ctx, (*dbq.Queries).UseGenericIndexPlans, fn)
}

// inPlanMode sends mode's statement and fn's one statement in one batch.
func (s *Store) inPlanMode(ctx context.Context, mode func(*dbq.Queries, context.Context) error, fn func(q *dbq.Queries) error) error {
	_, err := s.inPlanModeWaited(ctx, mode, fn)
	return err
}

// inPlanModeWaited is inPlanMode that also returns how long the batch
// waited for its connection before it was sent.
func (s *Store) inPlanModeWaited(ctx context.Context, mode func(*dbq.Queries, context.Context) error, fn func(q *dbq.Queries) error) (time.Duration, error) {
	p := &pipelined{pool: s.pool}
	q := dbq.New(p)
	if err := mode(q, ctx); err != nil {
		return 0, fmt.Errorf("choose plans: %w", err)
	}
	err := fn(q)
	return p.waited, err
}
