-- Queries of event matching, delivery attempts and Recent Deliveries.

-- name: SubscriptionsForEvent :many
-- Active subscriptions of the account that take this event type for this
-- job, one page in id order after the cursor: those for every job (partial
-- index on account_id, id) plus those naming the job (GIN index on job_ids).
-- Never scans all of an account's rows. A NULL job_id (a job id that is not
-- a number) matches no job list, so only the subscriptions for every job
-- match.
SELECT id, name FROM (
    SELECT s.id, s.name FROM webhook_subscriptions s
    WHERE s.account_id = sqlc.arg(account_id) AND s.active AND s.deleted_at IS NULL
      AND cardinality(s.job_ids) = 0
      AND sqlc.arg(event_type)::text = ANY (s.event_types)
      AND s.id > sqlc.arg(after)::text
    UNION ALL
    SELECT s.id, s.name FROM webhook_subscriptions s
    WHERE s.job_ids @> ARRAY[sqlc.narg(job_id)::bigint] AND s.active AND s.deleted_at IS NULL
      AND s.account_id = sqlc.arg(account_id)
      AND sqlc.arg(event_type)::text = ANY (s.event_types)
      AND s.id > sqlc.arg(after)::text
) m
ORDER BY m.id
LIMIT sqlc.arg(page_size);

-- name: LoadDeliveryAttempt :one
-- Loads what an attempt needs: the subscription's destination and sealed
-- secret and what is recorded of the delivery so far. Read-only: the record
-- is written once, after the attempt. No row: the subscription is gone.
SELECT s.client_url, s.active, (s.deleted_at IS NOT NULL)::boolean AS deleted,
       s.secret_key_id, s.secret_ciphertext,
       COALESCE(d.status, 'pending')::text AS delivery_status,
       COALESCE(d.attempt_count, 0)::int AS attempt_count,
       COALESCE(d.last_status_code, 0)::int AS last_status_code,
       COALESCE(d.last_error, '')::text AS last_error,
       COALESCE(d.retry_delay_ms, 0)::bigint AS retry_delay_ms
FROM webhook_subscriptions s
LEFT JOIN webhook_deliveries d ON d.id = sqlc.arg(delivery_id)
WHERE s.id = sqlc.arg(subscription_id) AND s.account_id = sqlc.arg(account_id);

-- name: CreatePendingDelivery :exec
-- The record of a redelivery asked for through the API, so its id can be
-- looked up at once; its first attempt fills it in.
INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type,
    job_id, run_id, is_test, redelivery_of, payload, workflow_id)
VALUES (sqlc.arg(delivery_id), sqlc.arg(account_id), sqlc.arg(subscription_id), sqlc.arg(event_id),
    sqlc.arg(event_type), sqlc.arg(job_id), sqlc.arg(run_id), sqlc.arg(is_test), sqlc.narg(redelivery_of),
    sqlc.arg(payload), sqlc.arg(workflow_id))
ON CONFLICT (id) DO NOTHING;

-- name: RecordDeliveryAttempt :exec
-- One write after an attempt: the delivery record (created by its first
-- recorded attempt, re-pointed at the workflow making this one), the
-- attempt row (idempotent) and the subscription's latest status. A final
-- record is never changed. A status code of 0 (no HTTP response) leaves
-- the subscription's http_status_code as it was.
WITH del AS (
    INSERT INTO webhook_deliveries AS d (id, account_id, subscription_id, event_id, event_type,
        job_id, run_id, is_test, redelivery_of, payload, workflow_id,
        status, attempt_count, last_status_code, last_error, retry_delay_ms, completed_at)
    VALUES (sqlc.arg(delivery_id), sqlc.arg(account_id), sqlc.arg(subscription_id), sqlc.arg(event_id),
        sqlc.arg(event_type), sqlc.arg(job_id), sqlc.arg(run_id), sqlc.arg(is_test), sqlc.narg(redelivery_of),
        sqlc.arg(payload), sqlc.arg(workflow_id),
        sqlc.arg(status), sqlc.arg(attempt_number), sqlc.arg(status_code), sqlc.arg(error_message),
        sqlc.arg(retry_delay_ms),
        CASE WHEN sqlc.arg(status)::text IN ('succeeded', 'failed', 'cancelled') THEN now() END)
    ON CONFLICT (id) DO UPDATE
    SET status = EXCLUDED.status, attempt_count = GREATEST(d.attempt_count, EXCLUDED.attempt_count),
        last_status_code = EXCLUDED.last_status_code, last_error = EXCLUDED.last_error,
        retry_delay_ms = EXCLUDED.retry_delay_ms, workflow_id = EXCLUDED.workflow_id,
        updated_at = now(), completed_at = EXCLUDED.completed_at
    WHERE d.status NOT IN ('succeeded', 'failed', 'cancelled')
    RETURNING d.id
), att AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms,
        status_code, error_kind, error_message, response_snippet)
    VALUES (sqlc.arg(delivery_id), sqlc.arg(attempt_number), sqlc.arg(started_at), sqlc.arg(duration_ms),
        sqlc.arg(status_code), sqlc.arg(error_kind), sqlc.arg(error_message), sqlc.arg(response_snippet))
    ON CONFLICT (delivery_id, attempt_number) DO NOTHING
    RETURNING delivery_id
)
UPDATE webhook_subscriptions s
SET http_status_code = CASE WHEN sqlc.arg(status_code)::int > 0 THEN sqlc.arg(status_code)::int ELSE s.http_status_code END,
    dispatched_at = sqlc.arg(started_at)::timestamptz
WHERE s.id = sqlc.arg(subscription_id)
  -- An older attempt finishing late must not move the latest status back.
  AND (s.dispatched_at IS NULL OR s.dispatched_at <= sqlc.arg(started_at)::timestamptz);

-- name: RepointDeliveries :exec
-- Names the delivery workflows that took over deliveries for their retries
-- (pairs of delivery id and workflow id), at hand-over.
UPDATE webhook_deliveries d
SET workflow_id = h.workflow_id, updated_at = now()
FROM (SELECT unnest(sqlc.arg(delivery_ids)::text[]) AS delivery_id,
             unnest(sqlc.arg(workflow_ids)::text[]) AS workflow_id) h
WHERE d.id = h.delivery_id AND d.workflow_id <> h.workflow_id;

-- name: CancelDelivery :exec
-- Records a delivery cancelled (creating its record if no attempt was
-- recorded yet) unless it is already final.
INSERT INTO webhook_deliveries AS d (id, account_id, subscription_id, event_id, event_type,
    job_id, run_id, is_test, redelivery_of, payload, workflow_id, status, last_error, completed_at)
VALUES (sqlc.arg(delivery_id), sqlc.arg(account_id), sqlc.arg(subscription_id), sqlc.arg(event_id),
    sqlc.arg(event_type), sqlc.arg(job_id), sqlc.arg(run_id), sqlc.arg(is_test), sqlc.narg(redelivery_of),
    sqlc.arg(payload), sqlc.arg(workflow_id), 'cancelled', sqlc.arg(reason), now())
ON CONFLICT (id) DO UPDATE
SET status = 'cancelled', last_error = EXCLUDED.last_error, updated_at = now(), completed_at = now()
WHERE d.status NOT IN ('succeeded', 'failed', 'cancelled');

-- name: ListDeliveries :many
-- The last attempt's duration comes along (one primary-key lookup per row),
-- so a page of Recent Deliveries is one query.
SELECT d.id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of, d.status,
       d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, d.created_at, d.updated_at,
       d.completed_at, COALESCE(last.duration_ms, 0)::int AS last_duration_ms
FROM webhook_deliveries d
LEFT JOIN LATERAL (
    SELECT a.duration_ms FROM webhook_delivery_attempts a
    WHERE a.delivery_id = d.id ORDER BY a.attempt_number DESC LIMIT 1
) last ON true
WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id)
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountDeliveries :one
SELECT count(*) FROM webhook_deliveries
WHERE subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id)
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status));

-- name: GetDelivery :one
SELECT * FROM webhook_deliveries
WHERE id = sqlc.arg(id) AND subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id);

-- name: ListDeliveryAttempts :many
SELECT * FROM webhook_delivery_attempts
WHERE delivery_id = sqlc.arg(delivery_id)
ORDER BY attempt_number;

-- name: SubscriptionForDispatch :one
-- What the test endpoint and redelivery need to start a delivery.
SELECT id, name, event_types FROM webhook_subscriptions
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL;

-- name: PurgeDeliveriesBefore :execrows
-- Deletes one bounded batch of old delivery records (attempts cascade);
-- callers loop until it returns fewer than the batch size.
DELETE FROM webhook_deliveries
WHERE id IN (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.created_at < sqlc.arg(cutoff)
    ORDER BY d.created_at
    LIMIT sqlc.arg(batch_size)
);

-- name: AccountExists :one
SELECT EXISTS (SELECT 1 FROM accounts WHERE id = sqlc.arg(id))::boolean;

-- name: FailDelivery :exec
-- Marks a delivery failed when its attempts ended without an outcome being
-- recorded (the database was unreachable throughout).
UPDATE webhook_deliveries
SET status = 'failed', last_error = sqlc.arg(reason), updated_at = now(), completed_at = now()
WHERE id = sqlc.arg(delivery_id) AND status NOT IN ('succeeded', 'failed', 'cancelled');
