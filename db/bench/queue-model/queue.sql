-- The same life with the due indexes on delivery_queue.
\set k random(1, 1000000000)
\set sub random(1, 1000)
WITH ins AS (
INSERT INTO deliveries_queued (id, account_id, subscription_id, event_id, event_type, job_id, run_id, lane_key, route, next_attempt_at, sequence, body_name)
SELECT 'wdl_' || :client_id || '_' || :k || '_' || i, :sub / 10, 'wh_' || (:sub + i), 'wev_' || :k || '_' || i, 'job.run.completed',
  (:sub * 7)::text, 'run_' || :k, (:sub + i) % 1024, 'shared', now(), :k::bigint * 10 + i, 'v1'
FROM generate_series(1, 3) i RETURNING id, subscription_id, lane_key, route, run_id, next_attempt_at)
INSERT INTO delivery_queue (delivery_id, subscription_id, lane_key, route, run_id, next_attempt_at)
SELECT id, subscription_id, lane_key, route, run_id, next_attempt_at FROM ins;
WITH c AS (UPDATE delivery_queue SET leased_until = now() + interval '15 seconds', attempt = attempt + 1
WHERE delivery_id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3'])
RETURNING delivery_id, attempt)
SELECT d.id, d.event_id, d.run_id, (SELECT max(attempt) FROM c), d.payload, d.body_name FROM deliveries_queued d
WHERE d.id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3']);
WITH gone AS (DELETE FROM delivery_queue
WHERE delivery_id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3']) RETURNING 1)
UPDATE deliveries_queued SET status = 'succeeded', last_status_code = 200, next_attempt_at = NULL, attempt_count = attempt_count + 1,
  completed_at = now(), updated_at = now()
WHERE id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3']);
