package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// logCounter reads how many delivery attempts Outpost's PostgreSQL log store
// holds for a tenant. Outpost writes them after the delivery, in batches
// (LOG_BATCH_SIZE, LOG_BATCH_THRESHOLD_SECONDS), so a phase's cost is only
// all paid once they are there.
type logCounter struct{ conn *pgx.Conn }

func openLogCounter(ctx context.Context, url string) (*logCounter, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to outpost's log store: %w", err)
	}
	return &logCounter{conn: conn}, nil
}

func (l *logCounter) close(ctx context.Context) error { return l.conn.Close(ctx) }

func (l *logCounter) count(ctx context.Context, tenant string) (int64, error) {
	var n int64
	if err := l.conn.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE tenant_id = $1`, tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("count logged attempts of %s: %w", tenant, err)
	}
	return n, nil
}

// waitFor polls until tenant has at least want attempts logged and returns
// how long that took, or fails after limit.
func (l *logCounter) waitFor(ctx context.Context, tenant string, want int64, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		n, err := l.count(ctx, tenant)
		if err != nil {
			return 0, err
		}
		if n >= want {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("log store: %d of %d attempts of %s after %s", n, want, tenant, limit)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
