package main

import (
	"context"

	"github.com/jobhooks/jobhooks/db"
)

func runMigrate(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "migrate", "Creates the database named in DATABASE_URL if missing and applies pending migrations.")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	logger := newLogger(env, cfg)
	if err := db.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	pool, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = db.Migrate(ctx, pool, logger)
	return err
}
