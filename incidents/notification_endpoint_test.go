package incidents_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Notification URLs on IP literals the test policy allows, so no test
// needs DNS.
const (
	firstURL  = "https://93.184.215.14/notices"
	secondURL = "https://93.184.215.15/notices"
)

type endpointFixture struct {
	pool    *pgxpool.Pool
	box     *secrets.Box
	svc     *incidents.Service
	access  subscriptions.Access
	account webhooks.Account
}

type noWaker struct{}

func (noWaker) Wake([]deliveries.RoutedWebhook) {}

func newEndpointFixture(t *testing.T) *endpointFixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "incidents", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	policy := &netguard.Policy{}
	svc, err := incidents.NewService(deliveries.NewStore(db.Pool), incidents.NewStore(db.Pool), box, policy, noWaker{})
	if err != nil {
		t.Fatal(err)
	}
	subs, err := subscriptions.NewService(subscriptions.NewStore(db.Pool, box), policy)
	if err != nil {
		t.Fatal(err)
	}
	admin := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: acct, License: "developer", PermissionSets: []string{"account_admin"}},
	}}
	a, err := subs.Authorize(admin, strconv.FormatInt(acct.ID, 10), true)
	if err != nil {
		t.Fatal(err)
	}
	return &endpointFixture{pool: db.Pool, box: box, svc: svc, access: a, account: acct}
}

// stored is the account's endpoint as the table holds it (ok false: no row),
// with its secret opened the way the worker opens it.
func (f *endpointFixture) stored(t *testing.T) (url, secret string, ok bool) {
	t.Helper()
	var keyID string
	var sealed []byte
	err := f.pool.QueryRow(context.Background(),
		`SELECT url, secret_key_id, secret_ciphertext FROM account_notification_endpoints WHERE account_id = $1`,
		f.account.ID).Scan(&url, &keyID, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false
	}
	if err != nil {
		t.Fatalf("read the stored endpoint: %v", err)
	}
	secret, err = f.box.Open(keyID, sealed, webhooks.NotificationSecretAAD(f.account.ID))
	if err != nil {
		t.Fatalf("open the stored secret: %v", err)
	}
	return url, secret, true
}

// waitForLockWait returns once a session of the test's database waits for
// a lock, or fails the test after 10 s; done says the rotation returned
// without ever waiting.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, done <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case <-done:
			t.Fatal("the rotation returned without waiting for the change in flight")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the rotation never waited for the change in flight")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRotateNotificationSecret_KeepsAChangeMadeMeanwhile: a PUT or DELETE
// whose transaction is still open when a rotation starts is kept once it
// commits. The change holds the endpoint's row lock while the rotation
// runs, which makes the interleaving certain: a rotation that read the
// endpoint first and wrote back the URL it read reverted the PUT and made
// the deleted endpoint again.
func TestRotateNotificationSecret_KeepsAChangeMadeMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(ctx context.Context, q *dbq.Queries, f *endpointFixture) error
		// wantURL is the endpoint's URL after both, "" for none.
		wantURL string
	}{
		{"PutOfANewURL", func(ctx context.Context, q *dbq.Queries, f *endpointFixture) error {
			_, err := q.PutNotificationEndpoint(ctx, dbq.PutNotificationEndpointParams{AccountID: f.account.ID,
				Url: secondURL, SecretKeyID: "unused", SecretCiphertext: []byte("unused"), KeepSecret: true})
			return err
		}, secondURL},
		{"Delete", func(ctx context.Context, q *dbq.Queries, f *endpointFixture) error {
			_, err := q.DeleteNotificationEndpoint(ctx, f.account.ID)
			return err
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newEndpointFixture(t)
			ctx := t.Context()
			if _, _, err := f.svc.PutNotificationEndpoint(ctx, f.access, firstURL); err != nil {
				t.Fatal(err)
			}
			tx, err := f.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			if err := tc.change(ctx, dbq.New(tx), f); err != nil {
				t.Fatal(err)
			}

			type rotated struct {
				e      incidents.NotificationEndpoint
				secret string
				err    error
			}
			result := make(chan rotated, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				e, secret, err := f.svc.RotateNotificationSecret(ctx, f.access)
				result <- rotated{e, secret, err}
			}()
			waitForLockWait(t, f.pool, done)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-result

			url, secret, ok := f.stored(t)
			if tc.wantURL == "" {
				if ok {
					t.Fatalf("after the DELETE, the rotation made the endpoint again (url %s)", url)
				}
				if !errors.Is(r.err, incidents.ErrNoNotificationEndpoint) || webhooks.ErrorCode(r.err) != webhooks.ENOTFOUND {
					t.Fatalf("rotation after the DELETE: %v, want ErrNoNotificationEndpoint (not found)", r.err)
				}
				return
			}
			if r.err != nil {
				t.Fatalf("rotation: %v", r.err)
			}
			if !ok || url != tc.wantURL || r.e.URL != tc.wantURL {
				t.Fatalf("after the PUT and the rotation: stored url %q, returned %q; want %q", url, r.e.URL, tc.wantURL)
			}
			if secret != r.secret || r.secret == "" {
				t.Fatal("the stored secret is not the one the rotation returned")
			}
		})
	}
}

// TestRotateNotificationSecret_NoEndpoint: a rotation without an endpoint
// is not found and makes none.
func TestRotateNotificationSecret_NoEndpoint(t *testing.T) {
	f := newEndpointFixture(t)
	_, secret, err := f.svc.RotateNotificationSecret(t.Context(), f.access)
	if !errors.Is(err, incidents.ErrNoNotificationEndpoint) || secret != "" {
		t.Fatalf("rotate without an endpoint: secret %q, %v; want ErrNoNotificationEndpoint", secret, err)
	}
	if url, _, ok := f.stored(t); ok {
		t.Fatalf("the rotation made an endpoint (url %s)", url)
	}
}
