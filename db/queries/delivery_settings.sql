-- Delivery settings of webhooks (webhooksettings): one row per webhook that
-- has any, beside its subscription row.

-- name: GetDeliverySettings :one
-- A live subscription of the account with its settings; the settings'
-- columns are NULL when it has none.
SELECT s.id AS subscription_id, d.max_requests_per_second, d.headers, d.client_certificate_pem,
       d.on_outage, d.format, d.notify_on, d.filter,
       (d.pagerduty_routing_key_key_id IS NOT NULL)::boolean AS has_pagerduty_routing_key, d.updated_at
FROM webhook_subscriptions s
LEFT JOIN webhook_delivery_settings d ON d.subscription_id = s.id
WHERE s.id = sqlc.arg(id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL;

-- name: EnsureDeliverySettings :exec
-- Gives a live subscription of the account a settings row of defaults
-- unless it has one, so the row can be locked for an update.
INSERT INTO webhook_delivery_settings (subscription_id, account_id, created_at, updated_at)
SELECT s.id, s.account_id, now(), now()
FROM webhook_subscriptions s
WHERE s.id = sqlc.arg(id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL
ON CONFLICT (subscription_id) DO NOTHING;

-- name: LockDeliverySettings :one
-- The settings of a live subscription of the account, locked: concurrent
-- updates apply one after another, and a secret kept by one is the one
-- stored when it runs.
SELECT d.max_requests_per_second, d.headers, d.client_certificate_pem, d.client_certificate_sha256,
       d.client_key_key_id, d.client_key_ciphertext, d.on_outage, d.format, d.notify_on, d.filter,
       d.pagerduty_routing_key_key_id, d.pagerduty_routing_key_ciphertext
FROM webhook_delivery_settings d
JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.subscription_id = sqlc.arg(id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL
FOR UPDATE OF d;

-- name: UpdateDeliverySettings :one
-- updated_at never goes backwards, even if the clock does.
UPDATE webhook_delivery_settings
SET max_requests_per_second = sqlc.narg(max_requests_per_second),
    headers = sqlc.arg(headers)::jsonb,
    client_certificate_pem = sqlc.narg(client_certificate_pem),
    client_certificate_sha256 = sqlc.narg(client_certificate_sha256),
    client_key_key_id = sqlc.narg(client_key_key_id),
    client_key_ciphertext = sqlc.narg(client_key_ciphertext),
    on_outage = sqlc.narg(on_outage)::text,
    format = sqlc.arg(format),
    notify_on = sqlc.arg(notify_on),
    filter = sqlc.narg(filter)::text,
    pagerduty_routing_key_key_id = sqlc.narg(pagerduty_routing_key_key_id)::text,
    pagerduty_routing_key_ciphertext = sqlc.narg(pagerduty_routing_key_ciphertext)::bytea,
    updated_at = greatest(now(), updated_at + interval '1 microsecond')
WHERE subscription_id = sqlc.arg(id) AND account_id = sqlc.arg(account_id)
RETURNING updated_at;

-- name: DeliverySettingsForSending :many
-- What attempts to these webhooks need: a webhook without a row has the
-- defaults.
SELECT subscription_id, max_requests_per_second, headers, client_certificate_pem,
       client_certificate_sha256, client_key_key_id, client_key_ciphertext, format,
       pagerduty_routing_key_key_id, pagerduty_routing_key_ciphertext
FROM webhook_delivery_settings
WHERE subscription_id = ANY(sqlc.arg(ids)::text[]);

-- name: MaxRequestsPerSecond :many
-- The rate limits of those of these webhooks that have one.
SELECT subscription_id, max_requests_per_second::float8 AS max_requests_per_second
FROM webhook_delivery_settings
WHERE subscription_id = ANY(sqlc.arg(ids)::text[]) AND max_requests_per_second IS NOT NULL;

-- name: DeliverySettingsNotSealedWith :many
-- Key rotation: settings (of live and deleted webhooks) holding a secret
-- header value, a private key or a PagerDuty routing key sealed with
-- another key than key_id, in id order after after_id.
SELECT subscription_id FROM webhook_delivery_settings d
WHERE d.subscription_id > sqlc.arg(after_id)
  AND (d.client_key_key_id <> sqlc.arg(key_id)::text
       OR d.pagerduty_routing_key_key_id <> sqlc.arg(key_id)::text
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(d.headers) h
                  WHERE (h->>'secret')::boolean AND h->>'key_id' <> sqlc.arg(key_id)::text))
ORDER BY d.subscription_id
LIMIT sqlc.arg(batch_size)::int;

-- name: LockDeliverySettingsSecrets :one
-- The sealed parts of one webhook's settings, locked for resealing.
SELECT headers, client_key_key_id, client_key_ciphertext,
       pagerduty_routing_key_key_id, pagerduty_routing_key_ciphertext
FROM webhook_delivery_settings
WHERE subscription_id = sqlc.arg(id)
FOR UPDATE;

-- name: ResealDeliverySettings :exec
-- Stores resealed secrets; the values themselves do not change, so
-- updated_at does not either.
UPDATE webhook_delivery_settings
SET headers = sqlc.arg(headers)::jsonb,
    client_key_key_id = sqlc.narg(client_key_key_id),
    client_key_ciphertext = sqlc.narg(client_key_ciphertext),
    pagerduty_routing_key_key_id = sqlc.narg(pagerduty_routing_key_key_id)::text,
    pagerduty_routing_key_ciphertext = sqlc.narg(pagerduty_routing_key_ciphertext)::bytea
WHERE subscription_id = sqlc.arg(id);

-- name: RecentAccountEvents :many
-- The account's latest events, newest first, to check a filter against
-- (the web UI's delivery settings page), from the account's index of
-- acceptance times (migration 00037).
SELECT id, event_type, data, tool_name, accepted_at
FROM webhook_events
WHERE account_id = sqlc.arg(account_id)
ORDER BY accepted_at DESC, id DESC
LIMIT sqlc.arg(max_events)::int;

-- name: WebhookName :one
-- The name of a live subscription of the account (a filter's webhookName).
SELECT name FROM webhook_subscriptions
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL;
