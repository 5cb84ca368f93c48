-- Delivery search across an account's live webhooks (the API's
-- GET .../webhooks/deliveries and the web UI's search box), newest first.
--
-- One query per index that drives it (00010_delivery_search.sql): the most
-- selective key given picks the query, and the keys after it in that order
-- (event, run, job) are optional filters. A single query with every key
-- optional ("narg IS NULL OR column = narg") would be planned once for all
-- values when PostgreSQL switches a prepared statement to its generic plan,
-- and that plan cannot use the event, run or job index. since/until bound
-- the index range through COALESCE, which a generic plan keeps.

-- name: SearchDeliveries :many
SELECT d.id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of,
       d.status, d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, COALESCE(d.workflow_run_id::text, '')::text AS workflow_run_id,
       d.created_at, d.updated_at, d.completed_at
FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountSearchDeliveries :one
SELECT count(*) FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type));

-- name: SearchDeliveriesByEvent :many
SELECT d.id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of,
       d.status, d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, COALESCE(d.workflow_run_id::text, '')::text AS workflow_run_id,
       d.created_at, d.updated_at, d.completed_at
FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.event_id = sqlc.arg(event_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
  AND (sqlc.narg(job_id)::text IS NULL OR d.job_id = sqlc.narg(job_id))
  AND (sqlc.narg(run_id)::text IS NULL OR d.run_id = sqlc.narg(run_id))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountSearchDeliveriesByEvent :one
SELECT count(*) FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.event_id = sqlc.arg(event_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
  AND (sqlc.narg(job_id)::text IS NULL OR d.job_id = sqlc.narg(job_id))
  AND (sqlc.narg(run_id)::text IS NULL OR d.run_id = sqlc.narg(run_id));

-- name: SearchDeliveriesByRun :many
SELECT d.id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of,
       d.status, d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, COALESCE(d.workflow_run_id::text, '')::text AS workflow_run_id,
       d.created_at, d.updated_at, d.completed_at
FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.run_id = sqlc.arg(run_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
  AND (sqlc.narg(job_id)::text IS NULL OR d.job_id = sqlc.narg(job_id))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountSearchDeliveriesByRun :one
SELECT count(*) FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.run_id = sqlc.arg(run_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
  AND (sqlc.narg(job_id)::text IS NULL OR d.job_id = sqlc.narg(job_id));

-- name: SearchDeliveriesByJob :many
SELECT d.id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of,
       d.status, d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, COALESCE(d.workflow_run_id::text, '')::text AS workflow_run_id,
       d.created_at, d.updated_at, d.completed_at
FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.job_id = sqlc.arg(job_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountSearchDeliveriesByJob :one
SELECT count(*) FROM webhook_deliveries d
WHERE d.account_id = sqlc.arg(account_id) AND d.job_id = sqlc.arg(job_id)
  AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
  AND d.created_at >= COALESCE(sqlc.narg(since)::timestamptz, '-infinity')
  AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity')
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(event_type)::text IS NULL OR d.event_type = sqlc.narg(event_type));
