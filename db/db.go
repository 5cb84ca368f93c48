// Package db opens the service's PostgreSQL database and migrates it. SQL
// lives in migrations/ and queries/; sqlc generates the Go code in dbq/.
package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open connects a pool to databaseURL and checks that it answers.
func Open(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig connects a pool with a prepared configuration (for tracers).
// Its connections run with JIT compilation off unless the URL sets jit:
// see withoutJIT.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	withoutJIT(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database %s: %w", cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// withoutJIT turns PostgreSQL's JIT compilation off for the pool's
// connections, unless the URL chose (a jit parameter). Every statement of
// the service reads and writes a few rows by index, and JIT only ever
// costs it: a statement's estimated cost over time partitions (whose
// parent has no unique index, so a join on an id is estimated as many
// rows a partition) passes jit_above_cost and its optimisation thresholds,
// and each call then compiles for seconds before it runs a millisecond's
// work (a soak's own-lane claims ran 15-24 s each once seven partitions
// were kept).
func withoutJIT(cfg *pgxpool.Config) {
	if _, chosen := cfg.ConnConfig.RuntimeParams["jit"]; !chosen {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
}

// Migrated is what Migrate did.
type Migrated struct {
	Version int64 // the schema version the database is at now
	Applied int   // migrations applied to get there; 0 when it was there
}

// Migrate applies every pending migration, logging each to logger (a
// discard logger for a caller that reports the Migrated instead). Goose
// takes a PostgreSQL advisory lock, so replicas starting together migrate
// once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (Migrated, error) {
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	return migrateSQL(ctx, sqlDB, logger)
}

func migrateSQL(ctx context.Context, sqlDB *sql.DB, logger *slog.Logger) (Migrated, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return Migrated{}, fmt.Errorf("migrations: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return Migrated{}, fmt.Errorf("migration lock: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, dir, goose.WithSessionLocker(locker))
	if err != nil {
		return Migrated{}, fmt.Errorf("migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return Migrated{}, fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		logger.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	version, err := provider.GetDBVersion(ctx)
	if err != nil {
		return Migrated{}, fmt.Errorf("read the schema version: %w", err)
	}
	return Migrated{Version: version, Applied: len(results)}, nil
}

// EnsureDatabase creates the database named in databaseURL when it does not
// exist, connecting to the server's "postgres" database to do so.
func EnsureDatabase(ctx context.Context, databaseURL string) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := cfg.Database
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return fmt.Errorf("connect to database %s: %w", name, err)
	}
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to create database %s: %w", name, err)
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !isDuplicateDatabase(err) {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func isDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P04"
}
