-- txn.sql with the queue kept by each statement itself (data-modifying
-- CTEs), the update trigger doing nothing (none.sql).
\set k random(0, 399)
WITH u AS (UPDATE webhook_deliveries SET leased_until = now() + interval '15 seconds', workflow_id = 'shard-1' WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]) RETURNING id, leased_until, workflow_id)
UPDATE webhook_delivery_queue q SET leased_until = u.leased_until, workflow_id = u.workflow_id FROM u WHERE q.id = u.id;
WITH u AS (UPDATE webhook_deliveries SET next_attempt_at = NULL, status = 'succeeded', leased_until = NULL WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]) RETURNING id)
DELETE FROM webhook_delivery_queue q USING u WHERE q.id = u.id;
WITH u AS (UPDATE webhook_deliveries SET next_attempt_at = now(), status = 'pending', workflow_id = '' WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]) RETURNING *)
INSERT INTO webhook_delivery_queue (id, subscription_id, account_id, lane_key, route, run_id, event_type, created_at, next_attempt_at, leased_until, workflow_id)
SELECT u.id, u.subscription_id, u.account_id, s.lane_key, u.route, u.run_id, u.event_type, u.created_at, u.next_attempt_at, u.leased_until, u.workflow_id
FROM u JOIN webhook_subscriptions s ON s.id = u.subscription_id;
