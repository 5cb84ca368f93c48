-- Queries of the endpoint breaker (RecordAttempts opens and closes it) and,
-- for incidents.Store, of the incidents it tells accounts about, their
-- notices and the accounts' notification endpoints.

-- name: HoldDeliveries :execrows
-- Moves the pending deliveries of webhooks whose breaker is open to the
-- route 'held', where no round takes them: a delivery follows its webhook's
-- route (deliveries/routes.go).
UPDATE webhook_deliveries d
SET route = 'held'
FROM webhook_subscriptions s
WHERE d.id = ANY (ARRAY(SELECT q.id FROM webhook_delivery_queue q
                        WHERE q.subscription_id = ANY (sqlc.arg(ids)::text[]) AND q.route <> 'held'))
  AND d.next_attempt_at IS NOT NULL AND d.route <> 'held'
  AND s.id = d.subscription_id AND s.delivery_route = 'held';

-- name: ReleaseHeld :execrows
-- After a probe closed a webhook's breaker: its held deliveries follow its
-- route (its own lane after the close), due now (oldest first): the waits their failures had earned
-- were waits for an endpoint that has answered since.
UPDATE webhook_deliveries d
SET route = s.delivery_route, next_attempt_at = LEAST(d.next_attempt_at, now())
FROM webhook_subscriptions s
WHERE d.id = ANY (ARRAY(SELECT q.id FROM webhook_delivery_queue q
                        WHERE q.subscription_id = sqlc.arg(subscription_id) AND q.route = 'held'))
  AND d.next_attempt_at IS NOT NULL AND d.route = 'held'
  AND s.id = d.subscription_id AND s.delivery_route <> 'held';

-- name: ClaimProbe :many
-- Takes the probe of a held webhook: its oldest pending delivery (by
-- acceptance; a run's earlier event first), due or not. A probe's attempt
-- is free: it counts in attempt_count and in max_attempts alike, so the
-- delivery keeps every retry for when the endpoint answers.
WITH oldest AS (
    -- From the queue (migration 00039): the first few in the probe's
    -- order, so one whose record is locked does not stop the probe.
    SELECT q.id FROM webhook_delivery_queue q
    WHERE q.subscription_id = sqlc.arg(subscription_id)
      AND (q.leased_until IS NULL OR q.leased_until <= now())
    ORDER BY q.created_at, CASE WHEN q.event_type = 'job.run.started' THEN 0 ELSE 1 END, q.id
    LIMIT 8
), probe AS (
    SELECT d.id, d.event_id FROM webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT oldest.id FROM oldest)) AND d.next_attempt_at IS NOT NULL
      AND (d.leased_until IS NULL OR d.leased_until <= now())
    ORDER BY d.created_at, CASE WHEN d.event_type = 'job.run.started' THEN 0 ELSE 1 END, d.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET attempt_count = d.attempt_count + 1, max_attempts = d.max_attempts + 1,
    leased_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
    workflow_id = sqlc.arg(workflow_id), workflow_run_id = webhook_uuid_or_null(sqlc.arg(workflow_run_id)::text), updated_at = now()
-- The record and its event by arrays of ids as well as by the join: a key
-- probe of each partition in any plan (docs/performance.md, "Planning").
FROM probe LEFT JOIN webhook_events e ON e.id = probe.event_id
    AND e.id = ANY (ARRAY(SELECT p.event_id FROM probe p))
WHERE d.id = ANY (ARRAY(SELECT p.id FROM probe p)) AND d.id = probe.id
RETURNING d.id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.attempt_count, d.max_attempts,
    d.payload, COALESCE(d.body_name, '')::text AS body_name, e.data AS event_data, COALESCE(e.tool_name, '')::text AS event_tool_name,
    COALESCE(e.accepted_at, d.created_at)::timestamptz AS event_accepted_at,
    COALESCE(e.trace_parent, ''::bytea)::bytea AS event_trace_parent, COALESCE(d.sequence, 0)::bigint AS sequence,
    d.leased_until;

-- name: ProbeNow :one
-- An operator asks for the next probe now: only while the breaker is open
-- and holds the webhook's deliveries (on_outage 'hold'; on 'retry' there
-- is no probe: the deliveries keep their schedule).
UPDATE webhook_subscriptions
SET breaker_next_probe_at = now()
WHERE id = sqlc.arg(id) AND delivery_route = 'held'
RETURNING id, account_id;

-- name: BreakerState :one
-- A webhook's breaker and incident, and its backlog (pending deliveries).
-- The breaker is open while breaker_opened_at is set, whatever its
-- webhook's on_outage; its deliveries are held while its route is 'held'.
SELECT s.id, s.account_id, s.delivery_route, s.attempt_failures_in_a_row, s.breaker_opened_at,
    s.breaker_next_probe_at, s.breaker_failed_probes, s.breaker_closed_at, s.incident_started_at,
    s.incident_announced_at, s.active, (s.deleted_at IS NOT NULL)::boolean AS deleted,
    (SELECT count(*) FROM webhook_delivery_queue q WHERE q.subscription_id = s.id)::bigint AS backlog
FROM webhook_subscriptions s
WHERE s.id = sqlc.arg(id);

-- name: OverdueProbes :many
-- The sweeper's safety net: held webhooks whose probe is overdue by more
-- than the grace (their lane is woken).
SELECT s.id, s.account_id
FROM webhook_subscriptions s
WHERE s.delivery_route = 'held'
  AND s.breaker_next_probe_at < now() - sqlc.arg(grace_ms)::bigint * interval '1 millisecond'
ORDER BY s.breaker_next_probe_at
LIMIT sqlc.arg(max_webhooks);

-- name: IncidentsDue :many
-- The sweeper's follow-up of incidents (a webhook on its shard has no
-- lane to keep their timers): webhooks whose incident is due a step, an
-- open breaker's announcement (notice_after_ms after it started) or its
-- end (the breaker closed quiet_ms ago), oldest incident first.
SELECT s.id
FROM webhook_subscriptions s
WHERE s.incident_started_at IS NOT NULL
  AND ((s.incident_announced_at IS NULL AND (s.breaker_opened_at IS NOT NULL OR s.delivery_route = 'held')
        AND s.incident_started_at <= now() - sqlc.arg(notice_after_ms)::bigint * interval '1 millisecond')
    OR (s.breaker_opened_at IS NULL AND s.delivery_route <> 'held'
        AND s.breaker_closed_at <= now() - sqlc.arg(quiet_ms)::bigint * interval '1 millisecond'))
ORDER BY s.incident_started_at
LIMIT sqlc.arg(max_webhooks);

-- name: AnnounceIncident :one
-- Marks a webhook's incident announced, once: no row when it was already
-- (or there is none).
UPDATE webhook_subscriptions
SET incident_announced_at = now()
WHERE id = sqlc.arg(id) AND incident_started_at IS NOT NULL AND incident_announced_at IS NULL
RETURNING id, account_id, incident_started_at::timestamptz AS incident_started_at, name, client_url;

-- name: EndIncident :one
-- Ends a webhook's incident once its breaker stayed closed for the quiet
-- period (quiet_ms) or it was deactivated; says whether it had been
-- announced. No row: no incident, or it is not over.
WITH old AS (
    SELECT o.id AS old_id, o.incident_started_at AS started_at, o.incident_announced_at AS announced_at
    FROM webhook_subscriptions o WHERE o.id = sqlc.arg(id) FOR UPDATE
)
UPDATE webhook_subscriptions s
SET incident_started_at = NULL, incident_announced_at = NULL
FROM old
WHERE s.id = old.old_id AND s.incident_started_at IS NOT NULL AND s.delivery_route <> 'held'
  AND (NOT s.active OR (s.breaker_opened_at IS NULL AND s.breaker_closed_at IS NOT NULL
       AND s.breaker_closed_at <= now() - sqlc.arg(quiet_ms)::bigint * interval '1 millisecond'))
RETURNING s.id, s.account_id, old.started_at::timestamptz AS incident_started_at, (old.announced_at IS NOT NULL)::boolean AS announced,
    s.name, s.client_url;

-- name: CreateNotice :one
-- Stores a notice for an account, once per webhook, kind and incident: no
-- row when it exists already.
INSERT INTO account_notices (id, account_id, subscription_id, kind, incident_started_at, payload)
VALUES (sqlc.arg(id), sqlc.arg(account_id), sqlc.arg(subscription_id), sqlc.arg(kind), sqlc.arg(incident_started_at),
    sqlc.arg(payload))
ON CONFLICT (subscription_id, kind, incident_started_at) DO NOTHING
RETURNING id;

-- name: GetNotice :one
SELECT n.id, n.account_id, n.subscription_id, n.kind, n.payload, n.status, n.attempt_count, n.created_at
FROM account_notices n
WHERE n.id = sqlc.arg(id);

-- name: RecordNoticeAttempt :exec
UPDATE account_notices
SET status = sqlc.arg(status), attempt_count = attempt_count + 1, last_status_code = sqlc.arg(status_code),
    last_error = sqlc.arg(last_error), updated_at = now()
WHERE id = sqlc.arg(id);

-- name: ListNotices :many
-- An account's latest notices, newest first.
SELECT n.id, n.subscription_id, n.kind, n.incident_started_at, n.status, n.attempt_count, n.last_status_code,
    n.last_error, n.created_at, n.updated_at, COALESCE(s.name, '')::text AS webhook_name
FROM account_notices n
LEFT JOIN webhook_subscriptions s ON s.id = n.subscription_id
WHERE n.account_id = sqlc.arg(account_id)
ORDER BY n.created_at DESC, n.id DESC
LIMIT sqlc.arg(row_limit);

-- name: CountRecentNotices :one
-- How many notices an account got since a moment (the storm bound).
SELECT count(*) FROM account_notices
WHERE account_id = sqlc.arg(account_id) AND created_at > sqlc.arg(since);

-- name: GetNotificationEndpoint :one
SELECT account_id, url, secret_key_id, secret_ciphertext, created_at, updated_at
FROM account_notification_endpoints
WHERE account_id = sqlc.arg(account_id);

-- name: PutNotificationEndpoint :one
INSERT INTO account_notification_endpoints (account_id, url, secret_key_id, secret_ciphertext)
VALUES (sqlc.arg(account_id), sqlc.arg(url), sqlc.arg(secret_key_id), sqlc.arg(secret_ciphertext))
ON CONFLICT (account_id) DO UPDATE
SET url = EXCLUDED.url,
    secret_key_id = CASE WHEN sqlc.arg(keep_secret)::boolean THEN account_notification_endpoints.secret_key_id ELSE EXCLUDED.secret_key_id END,
    secret_ciphertext = CASE WHEN sqlc.arg(keep_secret)::boolean THEN account_notification_endpoints.secret_ciphertext ELSE EXCLUDED.secret_ciphertext END,
    updated_at = now()
RETURNING account_id, url, secret_key_id, secret_ciphertext, created_at, updated_at, (xmax = 0)::boolean AS created;

-- name: RotateNotificationSecret :one
-- Gives the account's endpoint a new sealed secret in one statement, so a
-- URL set or an endpoint deleted meanwhile stays as it was left (no row:
-- the account has no endpoint).
UPDATE account_notification_endpoints
SET secret_key_id = sqlc.arg(secret_key_id), secret_ciphertext = sqlc.arg(secret_ciphertext), updated_at = now()
WHERE account_id = sqlc.arg(account_id)
RETURNING account_id, url, secret_key_id, secret_ciphertext, created_at, updated_at;

-- name: DeleteNotificationEndpoint :execrows
DELETE FROM account_notification_endpoints WHERE account_id = sqlc.arg(account_id);

-- name: IncidentOf :one
-- A webhook's incident going on (no row: none).
SELECT id, account_id, incident_started_at::timestamptz AS incident_started_at, name, client_url
FROM webhook_subscriptions
WHERE id = sqlc.arg(id) AND incident_started_at IS NOT NULL;

-- name: CountOpenBreakers :one
-- Open breakers, holding their deliveries or not (a partial index).
SELECT count(*) FROM webhook_subscriptions WHERE breaker_opened_at IS NOT NULL;

-- name: ResetBreaker :exec
-- A webhook deactivated or deleted by hand has no breaker: back to its
-- shard (its own lane when it has a rate limit), closed, without an
-- incident (activated again, it starts afresh). Its route changes are
-- transitions of the table in deliveries/routes.go (held -> shared, held ->
-- own); Store.ResetBreaker locks the row first (LockWebhookRoutes).
UPDATE webhook_subscriptions
SET delivery_route = CASE WHEN delivery_route <> 'held' THEN delivery_route
                          WHEN EXISTS (SELECT 1 FROM webhook_delivery_settings ds
                                       WHERE ds.subscription_id = webhook_subscriptions.id
                                         AND ds.max_requests_per_second IS NOT NULL) THEN 'own'
                          ELSE 'shared' END,
    attempt_failures_in_a_row = 0, breaker_opened_at = NULL, breaker_next_probe_at = NULL,
    breaker_failed_probes = 0, incident_started_at = NULL, incident_announced_at = NULL
WHERE id = sqlc.arg(id) AND (delivery_route = 'held' OR breaker_opened_at IS NOT NULL OR incident_started_at IS NOT NULL
    OR attempt_failures_in_a_row > 0);

-- name: DisableByReceiver :one
-- The receiver asked to stop deliveries (Webhook-Delivery: disable): the
-- webhook is deactivated as automatic deactivation does it, provided it
-- still sends where, and signs with what, that attempt did: a receiver the
-- webhook has moved away from (another client_url, a rotated secret)
-- speaks for nobody. No row: it was not active, or it moved.
-- A held webhook goes to its own lane (held -> own, a transition of the
-- table in deliveries/routes.go), which ends its deliveries.
UPDATE webhook_subscriptions
SET active = false, disabled_at = now(), disabled_reason = sqlc.arg(reason)::text,
    delivery_route = CASE WHEN delivery_route = 'held' THEN 'own' ELSE delivery_route END,
    breaker_opened_at = NULL, breaker_next_probe_at = NULL, breaker_failed_probes = 0,
    incident_started_at = COALESCE(incident_started_at, now()), updated_at = now()
WHERE id = sqlc.arg(id) AND active AND deleted_at IS NULL
  AND client_url = sqlc.arg(client_url)::text AND secret_version = sqlc.arg(secret_version)::int
RETURNING id, account_id;

-- name: AccountOpenBreakers :many
-- An account's live webhooks whose breaker is open (the web UI's list marks
-- them), holding their deliveries or not: the partial index of open
-- breakers by account.
SELECT id, (delivery_route = 'held')::boolean AS held
FROM webhook_subscriptions
WHERE account_id = sqlc.arg(account_id) AND deleted_at IS NULL AND breaker_opened_at IS NOT NULL;

-- name: NotificationSecretsNotSealedWith :many
-- Notification endpoint secrets sealed with another key than key_id, a
-- page at a time (secrets reencrypt).
SELECT account_id, secret_key_id, secret_ciphertext
FROM account_notification_endpoints
WHERE secret_key_id <> sqlc.arg(key_id) AND account_id > sqlc.arg(after_id)
ORDER BY account_id
LIMIT sqlc.arg(batch_size);

-- name: ResealNotificationSecret :execrows
-- Replaces a notification endpoint's sealed secret, only if it still holds
-- what was read.
UPDATE account_notification_endpoints
SET secret_key_id = sqlc.arg(new_key_id), secret_ciphertext = sqlc.arg(new_ciphertext)
WHERE account_id = sqlc.arg(account_id) AND secret_key_id = sqlc.arg(old_key_id) AND secret_ciphertext = sqlc.arg(old_ciphertext);

-- name: StrandedHeld :many
-- Webhooks with deliveries still held although their breaker is closed (a
-- release that failed, or an event ingested while the breaker closed): the
-- sweeper releases them.
SELECT DISTINCT d.subscription_id, d.account_id
FROM webhook_delivery_queue d
JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.route = 'held' AND s.delivery_route <> 'held'
LIMIT sqlc.arg(max_webhooks);

-- name: BreakerTimes :one
-- A webhook's breaker and incident times without its backlog: what a lane
-- round reads each time (BreakerState counts the pending deliveries).
SELECT s.id, s.account_id, s.delivery_route, s.attempt_failures_in_a_row, s.breaker_opened_at,
    s.breaker_next_probe_at, s.breaker_failed_probes, s.breaker_closed_at, s.incident_started_at,
    s.incident_announced_at, s.active, (s.deleted_at IS NOT NULL)::boolean AS deleted,
    -- How long ago it closed, by the database's clock: a worker measures
    -- the drain ramp from its own clock less this, never mixing the two.
    COALESCE((extract(epoch FROM now() - s.breaker_closed_at) * 1000)::bigint, -1)::bigint AS closed_ago_ms
FROM webhook_subscriptions s
WHERE s.id = sqlc.arg(id);
