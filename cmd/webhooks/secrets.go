package main

import (
	"context"
	"fmt"

	"github.com/acme/webhooks/secrets"
	"github.com/acme/webhooks/subscriptions"
)

const secretsUsage = "Usage: webhooks secrets reencrypt"

// runSecrets is "secrets reencrypt": the last step of rotating
// SECRET_ENCRYPTION_KEYS (README, "Encryption keys: backup and rotation").
func runSecrets(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] != "reencrypt" {
		fmt.Fprintln(env.stderr, secretsUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errUsage
	}
	fs := newFlagSet(env, "secrets reencrypt",
		"Re-encrypts every webhook hmac_secret that is not sealed with the first key of SECRET_ENCRYPTION_KEYS,\n"+
			"so older keys can then be removed. Secrets do not change; safe while the service runs.\n"+
			"Prints {\"resealed\": N, \"primary_key_id\": \"...\"} as JSON.")
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	box, err := secrets.BoxFromConfig(cfg)
	if err != nil {
		return err
	}
	pool, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := subscriptions.NewStore(pool, box).ResealSecrets(ctx)
	if err != nil {
		return fmt.Errorf("secrets reencrypt (%d resealed before the error): %w", n, err)
	}
	return printJSON(env, map[string]any{"resealed": n, "primary_key_id": box.PrimaryKeyID()})
}
