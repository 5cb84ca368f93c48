-- +goose Up
-- A rate limit is kept by the webhook's own lane alone, and no shared round
-- takes a rate-limited webhook's deliveries (deliveries/routes.go): a
-- webhook with a rate limit still on the shared route moves to its own
-- (shared -> own, "a rate limit was set"). Its pending deliveries follow at
-- its shard's next claim, which moves them to 'own' and wakes its lane.
UPDATE webhook_subscriptions s
SET delivery_route = 'own', route_changed_at = now(),
    route_reason = 'it has a rate limit (max_requests_per_second), kept by its own lane'
FROM webhook_delivery_settings ds
WHERE ds.subscription_id = s.id AND ds.max_requests_per_second IS NOT NULL
  AND s.delivery_route = 'shared' AND s.deleted_at IS NULL;

-- +goose Down
-- Nothing to undo: a webhook on its own lane goes back to its shard when the
-- lane is idle and it has no rate limit.
SELECT 1;
