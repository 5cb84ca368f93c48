package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/config"

	"github.com/jobhooks/jobhooks/identity"
)

// printJSON writes v as one line of JSON, the output of admin commands.
func printJSON(env *environment, v any) error {
	return json.NewEncoder(env.stdout).Encode(v)
}

// withDatabase loads the configuration, opens the database and runs fn.
func withDatabase(ctx context.Context, env *environment, fn func(config.Config, *pgxpool.Pool) error) error {
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	pool, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(cfg, pool)
}

// withIdentity opens the database and runs fn with an identity store.
func withIdentity(ctx context.Context, env *environment, fn func(*identity.Store) error) error {
	return withDatabase(ctx, env, func(_ config.Config, pool *pgxpool.Pool) error {
		return fn(identity.NewStore(pool))
	})
}

// subcommand checks that args start with verb ("webhooks <group> <verb>")
// and returns the rest; "-h"/"--help" prints the usage and is no error.
func subcommand(env *environment, group, verb string, args []string) ([]string, error) {
	if len(args) > 0 && args[0] == verb {
		return args[1:], nil
	}
	fmt.Fprintf(env.stderr, "Usage: webhooks %s %s [flags]\n", group, verb)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		return nil, errHelpShown
	}
	return nil, errUsage
}

func runAccounts(ctx context.Context, env *environment, args []string) error {
	args, err := subcommand(env, "accounts", "create", args)
	if err != nil {
		return flagsDone(err)
	}
	fs := newFlagSet(env, "accounts create", "Creates an account and prints {\"account_id\", \"account_identifier\"} as JSON.")
	name := fs.String("name", "", "account name (required)")
	plan := fs.String("plan", "team", "plan: developer, team or enterprise")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	return withIdentity(ctx, env, func(s *identity.Store) error {
		a, err := s.CreateAccount(ctx, *name, *plan)
		if err != nil {
			return err
		}
		return printJSON(env, map[string]any{"account_id": a.ID, "account_identifier": a.Identifier})
	})
}

func runUsers(ctx context.Context, env *environment, args []string) error {
	args, err := subcommand(env, "users", "create", args)
	if err != nil {
		return flagsDone(err)
	}
	fs := newFlagSet(env, "users create", "Creates a user in an account with a personal API key and prints {\"user_id\", \"token\"} as JSON.\nThe token is shown only this once.")
	account := fs.Int64("account", 0, "account id (required)")
	email := fs.String("email", "", "email address (required)")
	license := fs.String("license", "developer", "license: developer, read_only, analyst or it")
	var sets stringList
	fs.Var(&sets, "permission-set", "permission set, repeatable (for example account_admin, developer, member, read_only)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	return withIdentity(ctx, env, func(s *identity.Store) error {
		id, token, err := s.CreateUser(ctx, identity.NewUser{AccountID: *account, Email: *email, License: *license, PermissionSets: sets})
		if err != nil {
			return err
		}
		return printJSON(env, map[string]any{"user_id": id, "token": token})
	})
}

func runServiceTokens(ctx context.Context, env *environment, args []string) error {
	args, err := subcommand(env, "service-tokens", "create", args)
	if err != nil {
		return flagsDone(err)
	}
	fs := newFlagSet(env, "service-tokens create", "Creates an account-scoped service token and prints {\"service_token_id\", \"token\"} as JSON.\nThe token is shown only this once.")
	account := fs.Int64("account", 0, "account id (required)")
	name := fs.String("name", "", "token name (required)")
	var sets stringList
	fs.Var(&sets, "permission-set", "permission set, repeatable (for example account_admin, member, read_only)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	return withIdentity(ctx, env, func(s *identity.Store) error {
		id, token, err := s.CreateServiceToken(ctx, *account, *name, sets)
		if err != nil {
			return err
		}
		return printJSON(env, map[string]any{"service_token_id": id, "token": token})
	})
}
