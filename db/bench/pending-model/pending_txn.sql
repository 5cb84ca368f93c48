-- The same writes with a delivery kept whole in webhook_delivery_pending
-- until final (pending.sql): ingested there, claimed there, and moved to
-- the partitioned records by its final record.
\set w random(0, 99)
WITH i AS (
    INSERT INTO webhook_delivery_pending (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        workflow_id, next_attempt_at, route, status, sequence, lane_key)
    SELECT webhook_delivery_id_floor(now()) || lpad(to_hex(nextval('model_ids')), 18, '0'), :acct,
        'wsu_model' || lpad((1 + (:w + n) % 100)::text, 22, '0'), 'wev_model' || n, 'job.run.completed', '42', '',
        '', now(), 'shared', 'pending', nextval('model_ids'), (:w + n) % 128
    FROM generate_series(1, :per_call) n
    RETURNING id)
SELECT array_agg(id) AS ids FROM i
\gset
WITH picked AS (
    SELECT d.id FROM webhook_delivery_pending d
    WHERE d.id = ANY (ARRAY(SELECT unnest(:ids::text[]))) AND COALESCE(d.route, '') = 'shared'
      AND (d.leased_until IS NULL OR d.leased_until <= now())
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_delivery_pending d
SET attempt_count = d.attempt_count + 1, leased_until = now() + interval '15 seconds', workflow_id = 'shard-7',
    workflow_run_id = '0b0e8f9c-8f57-4d43-9b44-0d1f5d0c6a11', updated_at = now()
WHERE d.id = ANY (ARRAY(SELECT p.id FROM picked p));
WITH done AS (
    DELETE FROM webhook_delivery_pending d
    WHERE d.id = ANY (ARRAY(SELECT unnest(:ids::text[]))) AND d.status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
    RETURNING d.*
), moved AS (
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id, is_test,
        redelivery_of, status, attempt_count, last_status_code, last_error, payload, workflow_id, created_at, updated_at,
        completed_at, retry_delay_ms, max_attempts, next_attempt_at, workflow_run_id, leased_until, route,
        order_released_at, sequence, lost_claims, claim_reused, body_name)
    SELECT d.id, d.account_id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test,
        d.redelivery_of, 'succeeded', d.attempt_count, 200, d.last_error, d.payload, d.workflow_id, d.created_at, now(),
        now(), d.retry_delay_ms, d.max_attempts, NULL, d.workflow_run_id, NULL, d.route,
        d.order_released_at, d.sequence, d.lost_claims, d.claim_reused, d.body_name
    FROM done d
    RETURNING id
), released AS (
    UPDATE webhook_delivery_pending f SET next_attempt_at = now()
    WHERE f.id = ANY (ARRAY(SELECT w.id FROM webhook_delivery_pending w
                            WHERE w.subscription_id = 'none' AND w.run_id = 'none' AND w.run_id <> ''))
    RETURNING f.id
), att AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code)
    SELECT m.id, 1, now(), 12, 200 FROM moved m
    RETURNING delivery_id
)
SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM released) + (SELECT count(*) FROM att);
