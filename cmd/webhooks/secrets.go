package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// runSecrets is "secrets reencrypt": the last step of rotating
// SECRET_ENCRYPTION_KEYS (README, "Encryption keys: backup and rotation").
func runSecrets(ctx context.Context, env *environment, args []string) error {
	args, err := subcommand(env, "secrets", "reencrypt", args)
	if err != nil {
		return flagsDone(err)
	}
	fs := newFlagSet(env, "secrets reencrypt",
		"Re-encrypts every secret not sealed with the first key of SECRET_ENCRYPTION_KEYS (webhook hmac_secrets,\n"+
			"secret header values, client certificate keys, notification endpoint secrets, accounts' Ed25519\n"+
			"signing keys), so older keys can then be removed.\n"+
			"Secrets do not change; safe while the service runs.\n"+
			"Prints {\"resealed\": N, \"primary_key_id\": \"...\"} as JSON.")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	return withDatabase(ctx, env, func(cfg config.Config, pool *pgxpool.Pool) error {
		box, err := secretBox(cfg)
		if err != nil {
			return err
		}
		n, err := subscriptions.NewStore(pool, box).ResealSecrets(ctx)
		if err != nil {
			return fmt.Errorf("secrets reencrypt (%d resealed before the error): %w", n, err)
		}
		// The secret header values and client certificate keys of
		// webhooks' delivery settings.
		m, err := webhooksettings.NewStore(pool, box).ResealSecrets(ctx)
		if err != nil {
			return fmt.Errorf("secrets reencrypt (%d resealed before the error): %w", n+m, err)
		}
		// The accounts' notification endpoint secrets.
		k, err := incidents.ResealSecrets(ctx, incidents.NewStore(pool), box)
		if err != nil {
			return fmt.Errorf("secrets reencrypt (%d resealed before the error): %w", n+m+k, err)
		}
		// The accounts' Ed25519 signing keys.
		sk, err := signingkeys.NewStore(pool, box).ResealSecrets(ctx)
		if err != nil {
			return fmt.Errorf("secrets reencrypt (%d resealed before the error): %w", n+m+k+sk, err)
		}
		return printJSON(env, map[string]any{"resealed": n + m + k + sk, "primary_key_id": box.PrimaryKeyID()})
	})
}
