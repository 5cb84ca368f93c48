package deliveries

import (
	"testing"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestPipelined_TheModeHoldsForItsStatementAlone: the plan mode and the
// statement go in one batch, one implicit transaction: the statement runs
// in the mode, the connection's next statement does not, and an error
// while the rows are read is the rows' error.
func TestPipelined_TheModeHoldsForItsStatementAlone(t *testing.T) {
	pool := testenv.NewDatabase(t).OneConnectionPool(t) // the next statement runs on the same connection
	ctx := t.Context()
	setMode := `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

	p := &pipelined{pool: pool}
	if _, err := p.Exec(ctx, setMode); err != nil {
		t.Fatal(err)
	}
	rows, err := p.Query(ctx, `SELECT current_setting('plan_cache_mode')`)
	if err != nil {
		t.Fatal(err)
	}
	var in string
	for rows.Next() {
		if err := rows.Scan(&in); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if in != "force_generic_plan" {
		t.Errorf("the statement ran with plan_cache_mode %q, want force_generic_plan", in)
	}
	var after string
	if err := pool.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != "auto" {
		t.Errorf("the connection's next statement ran with plan_cache_mode %q, want auto", after)
	}

	p = &pipelined{pool: pool}
	if _, err := p.Exec(ctx, setMode); err != nil {
		t.Fatal(err)
	}
	rows, err = p.Query(ctx, `SELECT 1 / (2 - g) FROM generate_series(1, 3) g`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if rows.Err() == nil {
		t.Error("a division by zero in the third row: no error from the rows")
	}
	rows.Close()
	if err := pool.QueryRow(ctx, `SELECT 1`).Scan(new(int)); err != nil {
		t.Errorf("the connection after a failed batch: %v", err)
	}
}
