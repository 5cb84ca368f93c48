-- +goose Up
-- The shard claim's "beside" step (ClaimShared) gives each of a full lane
-- key's other webhooks a turn, so one webhook's backlog hides no other
-- and one account's burst over many webhooks starves no other account's.
-- It read every shared webhook of the key and probed the queue for each:
-- in a burst to an account's 10,000 webhooks at one destination (625 a
-- key), a claim probed 5,452 webhooks, most with nothing queued any more,
-- to find 706 candidates (98 of its 129 ms). It now walks the webhooks
-- with deliveries queued in the key, one index descent each (a loose scan
-- of this index, webhook_queue_shared_webhooks), whatever the number of the key's webhooks and however
-- long one webhook's backlog is.
CREATE INDEX webhook_delivery_queue_shared_webhook_idx ON webhook_delivery_queue (lane_key, subscription_id)
    WHERE route = 'shared';
DROP INDEX webhook_subscriptions_shared_lane_key_idx;

-- +goose StatementBegin
-- The webhooks with deliveries queued on the shared route in lane key
-- key, by id: a recursive walk of one index descent each. A set-returning
-- SQL function with one SELECT is inlined into the statement that calls
-- it, so the caller's LIMIT ends the walk.
CREATE FUNCTION webhook_queue_shared_webhooks(key SMALLINT) RETURNS SETOF TEXT
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    WITH RECURSIVE queued(id) AS (
        SELECT (SELECT min(q.subscription_id) FROM webhook_delivery_queue q
                WHERE q.lane_key = key AND q.route = 'shared')
        UNION ALL
        SELECT (SELECT min(q.subscription_id) FROM webhook_delivery_queue q
                WHERE q.lane_key = key AND q.route = 'shared' AND q.subscription_id > h.id)
        FROM queued h WHERE h.id IS NOT NULL
    )
    SELECT h.id FROM queued h WHERE h.id IS NOT NULL
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION webhook_queue_shared_webhooks(SMALLINT);
CREATE INDEX webhook_subscriptions_shared_lane_key_idx ON webhook_subscriptions (lane_key)
    WHERE delivery_route = 'shared' AND active AND deleted_at IS NULL;
DROP INDEX webhook_delivery_queue_shared_webhook_idx;
