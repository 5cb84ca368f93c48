package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/acme/webhooks/config"
	"github.com/acme/webhooks/db"
	"github.com/acme/webhooks/telemetry"
)

// loadConfig reads and validates the configuration from the environment.
func loadConfig(env *environment) (config.Config, error) {
	return config.Load(env.getenv)
}

// newLogger returns the JSON logger every command logs through.
func newLogger(env *environment, cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.LogLevel)))
	return slog.New(telemetry.LogHandler(slog.NewJSONHandler(env.stderr, &slog.HandlerOptions{Level: level})))
}

// openDatabase connects to DATABASE_URL.
func openDatabase(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	return db.Open(ctx, cfg.DatabaseURL)
}
