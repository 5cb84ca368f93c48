-- +goose Up
-- A webhook's lane key (as its deliveries', migration 00014), and the
-- shared webhooks by key: a claim whose window of a key is full (a busy
-- webhook's backlog) looks up the key's other webhooks here, so the
-- backlog never hides them.
ALTER TABLE webhook_subscriptions
    ADD COLUMN lane_key SMALLINT GENERATED ALWAYS AS (webhook_lane_key(id)) STORED;
CREATE INDEX webhook_subscriptions_shared_lane_key_idx ON webhook_subscriptions (lane_key)
    WHERE delivery_route = 'shared' AND active AND deleted_at IS NULL;

-- +goose Down
DROP INDEX webhook_subscriptions_shared_lane_key_idx;
ALTER TABLE webhook_subscriptions DROP COLUMN lane_key;
