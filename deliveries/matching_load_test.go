package deliveries_test

import (
	"crypto/rand"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// loadWebhooks adds to the account jobWebhooks active webhooks for
// job.run.completed, the n-th for job n alone (from 1), and allJobWebhooks
// for every job, in one statement each.
func loadWebhooks(tb testing.TB, pool *pgxpool.Pool, accountID int64, jobWebhooks, allJobWebhooks int) {
	tb.Helper()
	if _, err := pool.Exec(tb.Context(), `
		INSERT INTO webhook_subscriptions (id, account_id, name, client_url, event_types, job_ids, secret_key_id,
		                                   secret_ciphertext, created_at, updated_at)
		SELECT 'wsu_load' || $1::bigint || '_' || g, $1, 'hook', 'https://example.com/', ARRAY['job.run.completed'],
		       CASE WHEN g <= $2 THEN ARRAY[g::bigint] ELSE '{}' END, 'k1', '\x00', now(), now()
		FROM generate_series(1, $2::int + $3::int) g`, accountID, jobWebhooks, allJobWebhooks); err != nil {
		tb.Fatalf("load webhooks: %v", err)
	}
}

// newMatchFixture is newFixture with a pool on its database, for reading
// the tables directly.
func newMatchFixture(t *testing.T) (*fixture, *pgxpool.Pool) {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "matching", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: deliveries.NewStore(db.Pool), subs: subscriptions.NewStore(db.Pool, box), account: acct}, db.Pool
}
