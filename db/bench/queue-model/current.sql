-- One delivery row's life today: three inserted, claimed, recorded final.
\set k random(1, 1000000000)
\set sub random(1, 1000)
INSERT INTO deliveries_now (id, account_id, subscription_id, event_id, event_type, job_id, run_id, lane_key, route, next_attempt_at, sequence, body_name)
SELECT 'wdl_' || :client_id || '_' || :k || '_' || i, :sub / 10, 'wh_' || (:sub + i), 'wev_' || :k || '_' || i, 'job.run.completed',
  (:sub * 7)::text, 'run_' || :k, (:sub + i) % 1024, 'shared', now(), :k::bigint * 10 + i, 'v1'
FROM generate_series(1, 3) i;
UPDATE deliveries_now SET leased_until = now() + interval '15 seconds', attempt_count = attempt_count + 1, updated_at = now()
WHERE id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3'])
RETURNING id, event_id, run_id, attempt_count, payload, body_name;
UPDATE deliveries_now SET status = 'succeeded', last_status_code = 200, next_attempt_at = NULL, leased_until = NULL,
  completed_at = now(), updated_at = now()
WHERE id = ANY (ARRAY['wdl_' || :client_id || '_' || :k || '_1', 'wdl_' || :client_id || '_' || :k || '_2', 'wdl_' || :client_id || '_' || :k || '_3']);
