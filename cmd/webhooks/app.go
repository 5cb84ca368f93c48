package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/telemetry"
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
