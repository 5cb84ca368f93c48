// Package testenv gives tests the real dependencies they run against: a fresh
// PostgreSQL database per test and a Temporal dev server per test binary.
// Missing dependencies fail the test loudly; nothing is skipped.
package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db"
)

// AdminDatabaseURL is the server tests create their databases on, from
// TEST_DATABASE_URL (default: the local trust-auth PostgreSQL).
func AdminDatabaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Database is a migrated database that exists for one test.
type Database struct {
	URL  string
	Name string
	Pool *pgxpool.Pool
}

// NewDatabase creates and migrates a database that is dropped when t ends,
// with partitions of delivery records two weeks ahead (a test stores
// deliveries without an API process to make them as it goes).
func NewDatabase(tb testing.TB) *Database {
	tb.Helper()
	d := NewMigratedDatabase(tb)
	// The default retention's partitions, as a running API keeps them
	// (deliveries.KeepPartitions); the migration's first spans a minute.
	if _, err := d.Pool.Exec(context.Background(),
		"SELECT webhook_delivery_partitions_ensure(interval '7 days', now() + interval '14 days')"); err != nil {
		tb.Fatalf("testenv: delivery partitions: %v", err)
	}
	return d
}

// NewMigratedDatabase creates and migrates a database that is dropped when
// t ends, and leaves its partitions of delivery records as the migration
// made them: for deployments whose API processes make the next ones, as
// wide as their retention asks.
func NewMigratedDatabase(tb testing.TB) *Database {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	adminURL := AdminDatabaseURL()
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatalf("testenv: PostgreSQL is required (TEST_DATABASE_URL=%s): %v", adminURL, err)
	}
	defer admin.Close(ctx)

	sweepAbandonedDatabases(ctx, admin)
	// The creation time in the name lets later runs drop what a killed or
	// timed-out test binary could not.
	name := fmt.Sprintf("%s%d_%s", databasePrefix, time.Now().Unix(), webhooks.NewID("")[:16])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("testenv: create database: %v", err)
	}
	cfg, _ := pgx.ParseConfig(adminURL)
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if cfg.Password != "" {
		url = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}

	pool, err := db.Open(ctx, url)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	d := &Database{URL: url, Name: name, Pool: pool}
	tb.Cleanup(func() { d.drop(tb, adminURL) })
	if _, err := db.Migrate(ctx, pool, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return d
}

// databasePrefix starts the name of every test database.
const databasePrefix = "whtest_"

// abandonAfter is how old a test database must be before a later run drops
// it: far beyond the longest test run (go test -timeout 15m).
const abandonAfter = 6 * time.Hour

// sweepAbandonedDatabases drops test databases left behind by test binaries
// that were killed before their cleanups ran. Failures are ignored: the
// sweep is housekeeping, and a database another process is dropping at the
// same moment is fine.
func sweepAbandonedDatabases(ctx context.Context, admin *pgx.Conn) {
	rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE $1", databasePrefix+"%")
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-abandonAfter).Unix()
	for _, name := range names {
		stamp, _, ok := strings.Cut(strings.TrimPrefix(name, databasePrefix), "_")
		created, err := strconv.ParseInt(stamp, 10, 64)
		if !ok || err != nil || created >= cutoff {
			continue
		}
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
}

func (d *Database) drop(tb testing.TB, adminURL string) {
	d.Pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Errorf("testenv: drop database %s: %v", d.Name, err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		tb.Errorf("testenv: drop database %s: %v", d.Name, err)
	}
}

// OneConnectionPool opens a pool of one connection on d, closed when the
// test ends: every statement runs on the same connection (its prepared
// statements, settings and statistics).
func (d *Database) OneConnectionPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return d.openPool(tb, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
}

// PoolOf opens a pool of conns connections on d that keeps them open,
// closed when the test ends (a CPUMeter reads their backends).
func (d *Database) PoolOf(tb testing.TB, conns int32) *pgxpool.Pool {
	tb.Helper()
	return d.openPool(tb, func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.MinConns, cfg.MaxConnIdleTime, cfg.MaxConnLifetime = conns, conns, time.Hour, time.Hour
	})
}

// TracedPool opens a pool on d whose statements tracer sees (a plan test
// reads the statements a store sends), closed when the test ends.
func (d *Database) TracedPool(tb testing.TB, tracer pgx.QueryTracer) *pgxpool.Pool {
	tb.Helper()
	return d.openPool(tb, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer })
}

// openPool opens a pool on d configured by with, as the service opens its
// own (db.OpenConfig), closed when the test ends.
func (d *Database) openPool(tb testing.TB, with func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		tb.Fatal(err)
	}
	with(cfg)
	pool, err := db.OpenConfig(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// DeliveryID returns the id of the delivery that ingesting eventID made for
// subscriptionID (not a redelivery's or a replay's), failing the test when
// there is none: an id carries the second it was made, so tests read it
// rather than derive it.
func DeliveryID(tb testing.TB, pool *pgxpool.Pool, eventID, subscriptionID string) string {
	tb.Helper()
	var id string
	err := pool.QueryRow(context.Background(), `SELECT id FROM webhook_deliveries
		WHERE event_id = $1 AND subscription_id = $2 AND redelivery_of IS NULL AND NOT is_test`,
		eventID, subscriptionID).Scan(&id)
	if err != nil {
		tb.Fatalf("testenv: the delivery of event %s to webhook %s: %v", eventID, subscriptionID, err)
	}
	return id
}
