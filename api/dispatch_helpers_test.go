package api_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/worker"
)

// setDispatch gives the API the delivery service over pool and tc, its
// group commits running until the test ends, and its reads (setDelivery).
func setDispatch(t testing.TB, a *testAPI, d *api.Deps, tc client.Client, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := deliveries.NewStore(pool)
	setDelivery(a, d, dispatch.NewService(ctx, tc, store, slog.New(slog.DiscardHandler), worker.DispatchOptions(d.Config)), store)
}

// setDelivery gives the API the delivery service svc and the reads over
// its store, as the binary does, and keeps the store in a.DeliveryStore.
func setDelivery(a *testAPI, d *api.Deps, svc *dispatch.Service, store *deliveries.Store) {
	a.DeliveryStore = store
	d.Deliveries, d.DeliveryReads = svc, deliveryreads.NewService(store)
}
