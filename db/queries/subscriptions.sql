-- Webhook subscriptions as the management API sees them: only live
-- (not deleted) rows of one account, with the account's act_ identifier.

-- name: CreateSubscription :one
WITH inserted AS (
    INSERT INTO webhook_subscriptions (
        id, account_id, name, description, client_url, event_types, job_ids, active,
        secret_key_id, secret_ciphertext, created_at, updated_at
    ) VALUES (
        sqlc.arg(id), sqlc.arg(account_id), sqlc.arg(name), sqlc.arg(description),
        sqlc.arg(client_url), sqlc.arg(event_types)::text[], sqlc.arg(job_ids)::bigint[],
        sqlc.arg(active), sqlc.arg(secret_key_id), sqlc.arg(secret_ciphertext), now(), now()
    )
    RETURNING id, account_id, name, description, client_url, event_types, job_ids, active,
              http_status_code, dispatched_at, created_at, updated_at
)
SELECT inserted.id, inserted.account_id, a.identifier AS account_identifier, inserted.name,
       inserted.description, inserted.client_url, inserted.event_types, inserted.job_ids,
       inserted.active, inserted.http_status_code, inserted.dispatched_at, inserted.created_at,
       inserted.updated_at
FROM inserted JOIN accounts a ON a.id = inserted.account_id;

-- name: GetSubscription :one
SELECT s.id, s.account_id, a.identifier AS account_identifier, s.name, s.description,
       s.client_url, s.event_types, s.job_ids, s.active, s.http_status_code, s.dispatched_at,
       s.created_at, s.updated_at
FROM webhook_subscriptions s JOIN accounts a ON a.id = s.account_id
WHERE s.id = sqlc.arg(id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL;

-- name: GetSubscriptionForUpdate :one
-- Locks the subscription row so concurrent updates apply one after another.
SELECT s.id, s.account_id, a.identifier AS account_identifier, s.name, s.description,
       s.client_url, s.event_types, s.job_ids, s.active, s.http_status_code, s.dispatched_at,
       s.created_at, s.updated_at
FROM webhook_subscriptions s JOIN accounts a ON a.id = s.account_id
WHERE s.id = sqlc.arg(id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL
FOR UPDATE OF s;

-- name: ListSubscriptions :many
SELECT s.id, s.account_id, a.identifier AS account_identifier, s.name, s.description,
       s.client_url, s.event_types, s.job_ids, s.active, s.http_status_code, s.dispatched_at,
       s.created_at, s.updated_at
FROM webhook_subscriptions s JOIN accounts a ON a.id = s.account_id
WHERE s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL
ORDER BY s.created_at, s.id
LIMIT sqlc.arg(row_limit)::int OFFSET sqlc.arg(row_offset)::bigint;

-- name: CountSubscriptions :one
SELECT count(*) FROM webhook_subscriptions
WHERE account_id = sqlc.arg(account_id) AND deleted_at IS NULL;

-- name: UpdateSubscription :one
-- updated_at never goes backwards, even if the clock does or two updates
-- share a transaction timestamp.
UPDATE webhook_subscriptions
SET name = sqlc.arg(name), description = sqlc.arg(description), client_url = sqlc.arg(client_url),
    event_types = sqlc.arg(event_types)::text[], job_ids = sqlc.arg(job_ids)::bigint[],
    active = sqlc.arg(active),
    -- Activating a webhook clears why it was disabled and its failure streak.
    disabled_at = CASE WHEN sqlc.arg(active) THEN NULL ELSE disabled_at END,
    disabled_reason = CASE WHEN sqlc.arg(active) THEN '' ELSE disabled_reason END,
    failed_deliveries_in_a_row = CASE WHEN sqlc.arg(active) AND NOT active THEN 0 ELSE failed_deliveries_in_a_row END,
    failing_since = CASE WHEN sqlc.arg(active) AND NOT active THEN NULL ELSE failing_since END,
    updated_at = greatest(now(), updated_at + interval '1 microsecond')
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL
RETURNING updated_at;

-- name: DeleteSubscription :one
-- Soft delete: the row stays for its delivery history. Of two concurrent
-- deletes the second finds deleted_at set and returns no row.
UPDATE webhook_subscriptions
SET deleted_at = now(), active = false, updated_at = greatest(now(), updated_at + interval '1 microsecond')
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL
RETURNING id;

-- name: SecretsNotSealedWith :many
-- Key rotation: the secrets (of live and deleted subscriptions) sealed with
-- another key than key_id, in id order after after_id.
SELECT id, secret_key_id, secret_ciphertext FROM webhook_subscriptions
WHERE secret_key_id <> sqlc.arg(key_id) AND id > sqlc.arg(after_id)
ORDER BY id
LIMIT sqlc.arg(batch_size)::int;

-- name: ResealSecret :execrows
-- Replaces a sealed secret only if it is still the one that was read.
UPDATE webhook_subscriptions
SET secret_key_id = sqlc.arg(new_key_id), secret_ciphertext = sqlc.arg(new_ciphertext)
WHERE id = sqlc.arg(id) AND secret_key_id = sqlc.arg(old_key_id) AND secret_ciphertext = sqlc.arg(old_ciphertext);

-- name: RotateSecret :one
-- Replaces a live subscription's secret; the secret it replaces stays
-- valid until expires_at (NULL: it is dropped at once).
UPDATE webhook_subscriptions
SET previous_secret_key_id = CASE WHEN sqlc.narg(expires_at)::timestamptz IS NULL THEN NULL ELSE secret_key_id END,
    previous_secret_ciphertext = CASE WHEN sqlc.narg(expires_at)::timestamptz IS NULL THEN NULL ELSE secret_ciphertext END,
    previous_secret_expires_at = sqlc.narg(expires_at)::timestamptz,
    secret_key_id = sqlc.arg(secret_key_id), secret_ciphertext = sqlc.arg(secret_ciphertext),
    secret_version = secret_version + 1, updated_at = now()
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL
RETURNING id;

-- name: PreviousSecretsNotSealedWith :many
-- Key rotation: the previous secrets still valid after a secret rotation,
-- sealed with another key than key_id, in id order after after_id.
SELECT id, previous_secret_key_id::text AS secret_key_id, previous_secret_ciphertext::bytea AS secret_ciphertext
FROM webhook_subscriptions
WHERE previous_secret_key_id IS NOT NULL AND previous_secret_key_id <> sqlc.arg(key_id)::text
  AND previous_secret_expires_at > now() AND id > sqlc.arg(after_id)
ORDER BY id
LIMIT sqlc.arg(batch_size)::int;

-- name: ResealPreviousSecret :execrows
-- Replaces a sealed previous secret only if it is still the one that was read.
UPDATE webhook_subscriptions
SET previous_secret_key_id = sqlc.arg(new_key_id)::text, previous_secret_ciphertext = sqlc.arg(new_ciphertext)::bytea
WHERE id = sqlc.arg(id) AND previous_secret_key_id = sqlc.arg(old_key_id)::text
  AND previous_secret_ciphertext = sqlc.arg(old_ciphertext)::bytea;

-- name: DropExpiredPreviousSecrets :execrows
-- Previous secrets past their expiry are of no use: dropped, so no old key
-- is needed for them.
UPDATE webhook_subscriptions
SET previous_secret_key_id = NULL, previous_secret_ciphertext = NULL, previous_secret_expires_at = NULL
WHERE previous_secret_expires_at <= now();
