package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipelined is a dbq.DBTX that sends the statement that sets the plan
// mode (the Exec before it) and the statement that follows in one batch:
// one round trip and one implicit transaction, so the mode (set_config
// with is_local) holds for that statement alone. An explicit transaction
// cost four round trips (BEGIN, the mode, the statement, COMMIT) on each
// claim and record.
type pipelined struct {
	pool *pgxpool.Pool
	// mode is the queued statement that sets the plan mode.
	mode     string
	modeArgs []any
	// waited is how long the statement waited for its connection before
	// it was sent.
	waited time.Duration
}

// Exec queues the plan-mode statement for the next call.
func (p *pipelined) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.mode != "" {
		return pgconn.CommandTag{}, errors.New("pipelined: one plan-mode statement, then one statement")
	}
	p.mode, p.modeArgs = sql, args
	return pgconn.CommandTag{}, nil
}

// Query sends the plan-mode statement and sql in one batch. The rows end
// the batch when they are done (Err then says whether it committed).
func (p *pipelined) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.mode == "" {
		return nil, errors.New("pipelined: no plan-mode statement before the query")
	}
	start := time.Now()
	conn, err := p.pool.Acquire(ctx)
	p.waited = time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("acquire: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(p.mode, p.modeArgs...)
	b.Queue(sql, args...)
	br := conn.SendBatch(ctx, b)
	end := func() error {
		err := br.Close()
		conn.Release()
		return err
	}
	if _, err := br.Exec(); err != nil {
		return nil, errors.Join(fmt.Errorf("choose plans: %w", err), end())
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, end())
	}
	return &batchRows{Rows: rows, end: end}, nil
}

// QueryRow is not used by the statements run in a plan mode.
func (p *pipelined) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{errors.New("pipelined: QueryRow is not supported")}
}

// batchRows ends its batch once read: the implicit transaction commits
// then, and an error committing is the rows' error.
type batchRows struct {
	pgx.Rows
	end    func() error
	ended  bool
	endErr error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.endErr
}

func (r *batchRows) Close() { r.finish() }

func (r *batchRows) finish() {
	if r.ended {
		return
	}
	r.ended = true
	r.Rows.Close()
	r.endErr = r.end()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
