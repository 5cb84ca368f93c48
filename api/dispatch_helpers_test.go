package api_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/worker"
)

// newDispatch is the delivery service over pool and tc, its group commits
// running until the test ends.
func newDispatch(t testing.TB, tc client.Client, pool *pgxpool.Pool, cfg config.Config) *dispatch.Service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return dispatch.NewService(ctx, tc, deliveries.NewStore(pool), slog.New(slog.DiscardHandler), worker.DispatchOptions(cfg))
}
