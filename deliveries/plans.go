package deliveries

import (
	"context"
	"fmt"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// withGenericPlans runs fn's statements in one transaction in which
// PostgreSQL runs prepared statements with their generic plan, planned
// once per connection, rather than a plan made for each call's values.
//
// It is for the large statements of the hot path whose plan does not
// depend on their values (arrays of ids, a group's events): PostgreSQL
// keeps choosing a custom plan for them, because a generic plan cannot
// know an array's length, and planning one of them costs more than
// running it (IngestEvents: about 3.8 ms of planning to 2 ms of work on
// the topology bench; docs/performance.md).
//
// Not for a statement whose best plan depends on its values: the shared
// claim's generic plan took 5 times the custom plans' time per delivery on
// one webhook's backlog, 32 times with small candidate windows
// (BenchmarkShardStatements), so the claim keeps PostgreSQL's choice.
func (s *Store) withGenericPlans(ctx context.Context, fn func(q *dbq.Queries) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	q := s.q.WithTx(tx)
	if err := q.UseGenericPlans(ctx); err != nil {
		return fmt.Errorf("use generic plans: %w", err)
	}
	if err := fn(q); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
