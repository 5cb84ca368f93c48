-- +goose Up
-- Delivery core v3: due deliveries are taken by a fixed set of shard
-- workflows, each owning a range of lane keys (a webhook's lane key is the
-- first byte of the MD5 of its id, 0-255; deliveries.LaneKey in Go), so a
-- delivery's Temporal cost does not depend on how events spread over
-- webhooks. A webhook's route says who takes its deliveries: 'shared' (its
-- shard), 'own' (its own lane workflow, after an attempt outlasted the
-- shared rounds' patience, until that lane is idle) or 'paused' (nobody: an
-- operator paused it). Deliveries carry the route they are taken by; a
-- change of route moves the webhook's pending deliveries with it.

-- +goose StatementBegin
CREATE FUNCTION webhook_lane_key(subscription_id TEXT) RETURNS SMALLINT
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN get_byte(decode(md5(subscription_id), 'hex'), 0);
-- +goose StatementEnd

ALTER TABLE webhook_subscriptions
    ADD COLUMN delivery_route TEXT NOT NULL DEFAULT 'shared'
        CHECK (delivery_route IN ('shared', 'own', 'paused')),
    ADD COLUMN route_changed_at TIMESTAMPTZ,
    ADD COLUMN route_reason TEXT NOT NULL DEFAULT '',
    -- Bumped in the transaction that rotates the secret: a claim that sees
    -- another version than the signer's cache loads the secrets again.
    ADD COLUMN secret_version INTEGER NOT NULL DEFAULT 1;

ALTER TABLE webhook_deliveries
    ADD COLUMN lane_key SMALLINT GENERATED ALWAYS AS (webhook_lane_key(subscription_id)) STORED,
    ADD COLUMN route TEXT NOT NULL DEFAULT 'shared' CHECK (route IN ('shared', 'own', 'paused'));

-- Each page's record updates every webhook it delivered to (spec:
-- http_status_code, dispatched_at; the failure streak): room on the page
-- keeps those updates HOT when deliveries spread over many webhooks.
ALTER TABLE webhook_subscriptions SET (fillfactor = 70);

-- A shard's due deliveries, key by key, oldest due first.
CREATE INDEX webhook_deliveries_shared_due_idx
    ON webhook_deliveries (lane_key, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL AND route = 'shared';

-- +goose Down
DROP INDEX webhook_deliveries_shared_due_idx;
ALTER TABLE webhook_subscriptions RESET (fillfactor);
ALTER TABLE webhook_deliveries DROP COLUMN route, DROP COLUMN lane_key;
ALTER TABLE webhook_subscriptions
    DROP COLUMN secret_version,
    DROP COLUMN route_reason,
    DROP COLUMN route_changed_at,
    DROP COLUMN delivery_route;
DROP FUNCTION webhook_lane_key(TEXT);
