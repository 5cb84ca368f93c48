-- A delivery's writes as the service makes them today, per_call deliveries
-- a call (three by default, about a steady rate's): ingested into the
-- partitioned records (the queue's row by trigger), claimed (the records
-- locked, as the claim's picked does, then their lease and attempt), and
-- recorded final with its attempt (the queue's row deleted by trigger);
-- each statement its own transaction. The record's second update (per-run
-- order's release) finds nothing, as at most records.
\set w random(0, 99)
WITH i AS (
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        workflow_id, next_attempt_at, route, status, sequence)
    SELECT webhook_delivery_id_floor(now()) || lpad(to_hex(nextval('model_ids')), 18, '0'), :acct,
        'wsu_model' || lpad((1 + (:w + n) % 100)::text, 22, '0'), 'wev_model' || n, 'job.run.completed', '42', '',
        '', now(), 'shared', 'pending', nextval('model_ids')
    FROM generate_series(1, :per_call) n
    RETURNING id)
SELECT array_agg(id) AS ids FROM i
\gset
WITH picked AS (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT unnest(:ids::text[]))) AND COALESCE(d.route, '') = 'shared'
      AND (d.leased_until IS NULL OR d.leased_until <= now())
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d
SET attempt_count = d.attempt_count + 1, leased_until = now() + interval '15 seconds', workflow_id = 'shard-7',
    workflow_run_id = '0b0e8f9c-8f57-4d43-9b44-0d1f5d0c6a11', updated_at = now()
WHERE d.id = ANY (ARRAY(SELECT p.id FROM picked p));
WITH upd AS (
    UPDATE webhook_deliveries d
    SET status = 'succeeded', last_status_code = 200, next_attempt_at = NULL, leased_until = NULL,
        completed_at = now(), updated_at = now()
    WHERE d.id = ANY (ARRAY(SELECT unnest(:ids::text[]))) AND d.status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
    RETURNING d.id
), released AS (
    UPDATE webhook_deliveries f SET next_attempt_at = now()
    WHERE f.id = ANY (ARRAY(SELECT w.id FROM webhook_delivery_queue w
                            WHERE w.subscription_id = 'none' AND w.run_id = 'none' AND w.run_id <> ''))
    RETURNING f.id
), att AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code)
    SELECT u.id, 1, now(), 12, 200 FROM upd u
    RETURNING delivery_id
)
SELECT (SELECT count(*) FROM upd) + (SELECT count(*) FROM released) + (SELECT count(*) FROM att);
