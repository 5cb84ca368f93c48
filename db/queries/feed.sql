-- Queries of a webhook's feed: its numbered deliveries, for a receiver to
-- fetch what it missed.

-- name: FeedWebhook :one
-- The account's live webhook, its current secret (the feed signs each
-- body with it) and its format. No row: no such webhook of this account.
SELECT s.id, s.name, s.secret_key_id, s.secret_ciphertext, COALESCE(ds.format, 'standard')::text AS format
FROM webhook_subscriptions s
LEFT JOIN webhook_delivery_settings ds ON ds.subscription_id = s.id
WHERE s.id = sqlc.arg(subscription_id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL;

-- name: FeedPage :many
-- The webhook's numbered deliveries after a number, in order: originals
-- only (a redelivery or replay repeats its original's number). A body not
-- fixed yet comes with what it is built from, as a claim gives it. A range
-- of webhook_deliveries_sequence_idx.
-- The page's events are read by an array of their ids, a key probe of each
-- partition in any plan (docs/performance.md, "Planning").
WITH page AS MATERIALIZED (
    SELECT d.sequence, d.id, d.event_id, d.event_type, d.status, d.created_at, d.payload, d.body_name
    FROM webhook_deliveries d
    WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id)
      AND d.sequence IS NOT NULL AND d.redelivery_of IS NULL AND d.sequence > sqlc.arg(after)::bigint
    ORDER BY d.sequence
    LIMIT sqlc.arg(row_limit)
), evs AS MATERIALIZED (
    SELECT e.id, e.data, e.tool_name, e.accepted_at FROM webhook_events e
    WHERE e.id = ANY (ARRAY(SELECT p.event_id FROM page p WHERE p.payload IS NULL))
)
SELECT d.sequence::bigint AS sequence, d.id, d.event_id, d.event_type, d.status, d.created_at, d.payload,
    COALESCE(d.body_name, '')::text AS body_name,
    e.data AS event_data, COALESCE(e.tool_name, '')::text AS event_tool_name,
    COALESCE(e.accepted_at, d.created_at)::timestamptz AS event_accepted_at
FROM page d
LEFT JOIN evs e ON d.payload IS NULL AND e.id = d.event_id
ORDER BY d.sequence;

-- name: FixFeedBodies :many
-- Fixes the bodies the feed built for deliveries that have none yet, and
-- returns each delivery's body as stored now: the feed's, or the one an
-- attempt fixed first (the row lock orders them). Not while a first
-- attempt is in flight (leased): it sends the body its claim built, with
-- the webhook as the claim read it, and its record fixes that one; such a
-- delivery's body comes back NULL.
WITH p AS (
    SELECT unnest(sqlc.arg(ids)::text[]) AS id, unnest(sqlc.arg(payloads)::bytea[]) AS payload,
        unnest(sqlc.arg(body_names)::text[]) AS body_name
), upd AS (
    UPDATE webhook_deliveries d
    SET payload = CASE WHEN d.payload IS NULL AND d.body_name IS NULL AND (d.leased_until IS NULL OR d.leased_until <= now())
                       THEN p.payload ELSE d.payload END,
        body_name = CASE WHEN d.payload IS NULL AND d.body_name IS NULL AND (d.leased_until IS NULL OR d.leased_until <= now())
                         THEN NULLIF(p.body_name, '') ELSE d.body_name END
    FROM p
    WHERE d.id = p.id
    RETURNING d.id, d.payload, COALESCE(d.body_name, '')::text AS body_name
)
SELECT upd.id, upd.payload, upd.body_name FROM upd;
