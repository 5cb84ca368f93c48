-- Routing at ingestion (issue 38): the filters ingestion judges events
-- with, and the job states of state-change webhooks.

-- name: WebhookRouting :many
-- Each account's routing version, whether any of its live webhooks
-- follows states, and its live webhooks with a filter, with what matching
-- needs of them (one row per account without any, its webhook columns
-- empty and filter NULL). One statement: the version and the rest agree.
SELECT a.account_id::bigint AS account_id,
       COALESCE(v.version, 0)::bigint AS version,
       EXISTS (SELECT 1 FROM webhook_subscriptions s
               WHERE s.account_id = a.account_id AND s.notify_state_change AND s.deleted_at IS NULL)::boolean AS follows_state,
       COALESCE(f.id, '')::text AS subscription_id, COALESCE(f.name, '')::text AS name,
       COALESCE(f.event_types, '{}')::text[] AS event_types, COALESCE(f.job_ids, '{}')::bigint[] AS job_ids,
       f.filter
FROM unnest(sqlc.arg(account_ids)::bigint[]) a (account_id)
LEFT JOIN webhook_routing_versions v ON v.account_id = a.account_id
LEFT JOIN LATERAL (
    SELECT s.id, s.name, s.event_types, s.job_ids, d.filter
    FROM webhook_delivery_settings d
    JOIN webhook_subscriptions s ON s.id = d.subscription_id
    WHERE d.account_id = a.account_id AND d.filter IS NOT NULL AND s.deleted_at IS NULL
) f ON true;

-- name: WebhookJobStates :many
-- A state-change webhook's failing jobs, longest failing first (at most
-- max_jobs), each with the count of them all.
SELECT j.job_id, j.failing_since::timestamptz AS failing_since, j.outcome_at, j.outcome_run_id,
       count(*) OVER ()::bigint AS failing_jobs
FROM webhook_job_states j
JOIN webhook_subscriptions s ON s.id = j.subscription_id
WHERE j.subscription_id = sqlc.arg(subscription_id) AND s.account_id = sqlc.arg(account_id) AND j.failing
ORDER BY j.failing_since, j.job_id
LIMIT sqlc.arg(max_jobs)::int;
