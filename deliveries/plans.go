package deliveries

import (
	"context"
	"fmt"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// withGenericPlans runs fn's statements in one transaction in which
// PostgreSQL runs prepared statements with their generic plan, planned
// once per connection, rather than a plan made for each call's values,
// and never compiles them with JIT.
//
// It is for the large statements of the hot path whose plan does not
// depend on their values (arrays of ids, a group's events): PostgreSQL
// keeps choosing a custom plan for them, because a generic plan cannot
// know an array's length, and planning one of them costs more than
// running it (IngestEvents: about 3.8 ms of planning to 2 ms of work on
// the topology bench; docs/performance.md). JIT is off because a generic
// plan's estimates (1,000 rows from each array) can pass jit_above_cost,
// and compiling the shared claim took 160 ms a call.
func (s *Store) withGenericPlans(ctx context.Context, fn func(q *dbq.Queries) error) error {
	return s.inPlanMode(ctx, (*dbq.Queries).UseGenericPlans, fn)
}

// withGenericIndexPlans is withGenericPlans for a statement whose generic
// plan must read tables by their indexes whatever the statistics were when
// it was made: it is kept until the next ANALYZE, and one made while
// webhook_deliveries was nearly empty (a new deployment's first claims)
// scanned it whole once it had grown.
func (s *Store) withGenericIndexPlans(ctx context.Context, fn func(q *dbq.Queries) error) error {
	return s.inPlanMode(ctx, (*dbq.Queries).UseGenericIndexPlans, fn)
}

func (s *Store) inPlanMode(ctx context.Context, mode func(*dbq.Queries, context.Context) error, fn func(q *dbq.Queries) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	q := s.q.WithTx(tx)
	if err := mode(q, ctx); err != nil {
		return fmt.Errorf("choose plans: %w", err)
	}
	if err := fn(q); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
