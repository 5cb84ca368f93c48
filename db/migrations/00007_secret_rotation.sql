-- +goose Up
-- A rotated secret stays valid until previous_secret_expires_at: until
-- then, deliveries carry a Standard Webhooks signature with each secret.
-- Sealed like the current one (same key list, the subscription id bound in).
ALTER TABLE webhook_subscriptions
    ADD COLUMN previous_secret_key_id     TEXT,
    ADD COLUMN previous_secret_ciphertext BYTEA,
    ADD COLUMN previous_secret_expires_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE webhook_subscriptions
    DROP COLUMN previous_secret_expires_at,
    DROP COLUMN previous_secret_ciphertext,
    DROP COLUMN previous_secret_key_id;
