-- +goose Up
-- A webhook's lane key follows its destination (its account and the
-- scheme, host and port of its client_url: destination_key) as well as its
-- id: the key's high four bits are the destination's bucket, its low four
-- the webhook's, and a shard owns whole buckets (deliveries.ShardKeys), so
-- every shared delivery to one destination is in one shard (issue 37
-- item 4), while a destination's webhooks still spread over sixteen keys. A destination's in-flight limit is learned and kept by the
-- worker that runs the shard's rounds; with the key of the webhook's id,
-- two webhooks of one host could be in two shards run by two workers,
-- each sending up to the limit it learned alone.
--
-- The lane key's one home is the webhook's row. The queue takes it from
-- there when a delivery becomes due (the triggers below), and follows it
-- when the webhook's client_url moves to another destination. The records
-- no longer keep a copy.

-- Both generated columns read the old key function.
ALTER TABLE webhook_deliveries DROP COLUMN lane_key;
ALTER TABLE webhook_subscriptions DROP COLUMN lane_key; -- and its index
DROP FUNCTION webhook_lane_key(TEXT);

-- +goose StatementBegin
CREATE FUNCTION webhook_lane_key(destination_key TEXT, webhook_id TEXT) RETURNS SMALLINT
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ((get_byte(decode(md5(destination_key), 'hex'), 0) & 240)
          | (get_byte(decode(md5(webhook_id), 'hex'), 0) & 15))::smallint;
-- +goose StatementEnd

-- (A generated column cannot read another: destination_key's expression.)
ALTER TABLE webhook_subscriptions ADD COLUMN lane_key SMALLINT NOT NULL
    GENERATED ALWAYS AS (webhook_lane_key(account_id::text || ' ' || webhook_destination(client_url), id)) STORED;
COMMENT ON COLUMN webhook_subscriptions.lane_key IS
    'the high four bits of its destination''s MD5 (destination_key) and the low four of its id''s: deliveries.LaneKey';
CREATE INDEX webhook_subscriptions_shared_lane_key_idx ON webhook_subscriptions (lane_key)
    WHERE delivery_route = 'shared' AND active AND deleted_at IS NULL;

UPDATE webhook_delivery_queue q SET lane_key = s.lane_key
FROM webhook_subscriptions s
WHERE s.id = q.subscription_id AND q.lane_key <> s.lane_key;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_queue_inserted() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_delivery_queue (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, s.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM inserted n
    JOIN webhook_subscriptions s ON s.id = n.subscription_id
    WHERE n.next_attempt_at IS NOT NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_delivery_queue q
    USING updated n
    WHERE q.id = n.id AND n.next_attempt_at IS NULL;
    INSERT INTO webhook_delivery_queue AS q (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, s.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM updated n
    JOIN webhook_subscriptions s ON s.id = n.subscription_id
    WHERE n.next_attempt_at IS NOT NULL
    ON CONFLICT (id) DO UPDATE
    SET route = EXCLUDED.route, next_attempt_at = EXCLUDED.next_attempt_at, leased_until = EXCLUDED.leased_until,
        workflow_id = EXCLUDED.workflow_id
    WHERE (q.route, q.next_attempt_at, q.leased_until, q.workflow_id)
          IS DISTINCT FROM (EXCLUDED.route, EXCLUDED.next_attempt_at, EXCLUDED.leased_until, EXCLUDED.workflow_id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A webhook whose client_url moves to another destination takes its due
-- deliveries to the new key's shard (the API wakes that shard after the
-- update commits). An attempt in flight finishes in the round that claimed
-- it; its next attempt, if any, is the new shard's.
CREATE FUNCTION webhook_lane_key_moved() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE webhook_delivery_queue q SET lane_key = NEW.lane_key
    WHERE q.subscription_id = NEW.id AND q.lane_key <> NEW.lane_key;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_lane_key_moved AFTER UPDATE OF client_url ON webhook_subscriptions
    FOR EACH ROW WHEN (OLD.lane_key IS DISTINCT FROM NEW.lane_key) EXECUTE FUNCTION webhook_lane_key_moved();

-- +goose Down
DROP TRIGGER webhook_lane_key_moved ON webhook_subscriptions;
DROP FUNCTION webhook_lane_key_moved();

-- +goose StatementBegin
CREATE FUNCTION webhook_lane_key(subscription_id TEXT) RETURNS SMALLINT
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN get_byte(decode(md5(subscription_id), 'hex'), 0);
-- +goose StatementEnd

ALTER TABLE webhook_deliveries ADD COLUMN lane_key SMALLINT GENERATED ALWAYS AS (webhook_lane_key(subscription_id)) STORED;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_queue_inserted() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_delivery_queue (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, n.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM inserted n
    WHERE n.next_attempt_at IS NOT NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_delivery_queue q
    USING updated n
    WHERE q.id = n.id AND n.next_attempt_at IS NULL;
    INSERT INTO webhook_delivery_queue AS q (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, n.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM updated n
    WHERE n.next_attempt_at IS NOT NULL
    ON CONFLICT (id) DO UPDATE
    SET route = EXCLUDED.route, next_attempt_at = EXCLUDED.next_attempt_at, leased_until = EXCLUDED.leased_until,
        workflow_id = EXCLUDED.workflow_id
    WHERE (q.route, q.next_attempt_at, q.leased_until, q.workflow_id)
          IS DISTINCT FROM (EXCLUDED.route, EXCLUDED.next_attempt_at, EXCLUDED.leased_until, EXCLUDED.workflow_id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

UPDATE webhook_delivery_queue q SET lane_key = webhook_lane_key(q.subscription_id);

DROP INDEX webhook_subscriptions_shared_lane_key_idx;
ALTER TABLE webhook_subscriptions DROP COLUMN lane_key;
ALTER TABLE webhook_subscriptions ADD COLUMN lane_key SMALLINT GENERATED ALWAYS AS (webhook_lane_key(id)) STORED;
CREATE INDEX webhook_subscriptions_shared_lane_key_idx ON webhook_subscriptions (lane_key)
    WHERE delivery_route = 'shared' AND active AND deleted_at IS NULL;
DROP FUNCTION webhook_lane_key(TEXT, TEXT);
