-- Queries of replays: sending a webhook's missed deliveries again.

-- name: CreateReplay :one
-- A replay of the live webhook's deliveries in [since, until) whose status
-- is one of statuses, counted now; tests and deliveries of an event that
-- has since succeeded to this webhook are left out. No row: no such webhook.
INSERT INTO webhook_replays (id, account_id, subscription_id, since, until, statuses, total)
SELECT sqlc.arg(id), s.account_id, s.id, sqlc.arg(since), sqlc.narg(until), sqlc.arg(statuses)::text[],
    (SELECT count(*) FROM webhook_deliveries d
     WHERE d.subscription_id = s.id AND NOT d.is_test AND d.status = ANY (sqlc.arg(statuses)::text[])
       AND d.created_at >= sqlc.arg(since)::timestamptz AND d.created_at < COALESCE(sqlc.narg(until)::timestamptz, 'infinity'::timestamptz)
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries ok
                       WHERE ok.subscription_id = d.subscription_id AND ok.event_id = d.event_id AND ok.status = 'succeeded'))
FROM webhook_subscriptions s
WHERE s.id = sqlc.arg(subscription_id) AND s.account_id = sqlc.arg(account_id) AND s.deleted_at IS NULL
RETURNING id, total;

-- name: GetReplay :one
SELECT * FROM webhook_replays
WHERE id = sqlc.arg(id) AND subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id);

-- name: CancelReplay :one
-- Stops a running replay; what it sent stays sent.
UPDATE webhook_replays SET status = 'cancelled', finished_at = now()
WHERE id = sqlc.arg(id) AND subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id)
  AND status = 'running'
RETURNING id;

-- name: ReplayNextBatch :one
-- Sends the replay's next batch: a new delivery (the same body and
-- sequence number, due now on the shared route, whose claim moves it to
-- the webhook's route when it has another) of each of the next deliveries
-- after the cursor, oldest first, and moves the cursor. Each new id is
-- made now for the replay and the original; the cursor, moved in the same
-- statement, is what sends each original once. Nothing once the replay is not
-- running. Returns how many it sent and the replay's status.
WITH rp AS (
    SELECT wr.* FROM webhook_replays wr WHERE wr.id = sqlc.arg(replay_id)::text FOR UPDATE
), next AS (
    SELECT d.* FROM webhook_deliveries d, rp
    WHERE rp.status = 'running' AND d.subscription_id = rp.subscription_id AND NOT d.is_test
      AND d.status = ANY (rp.statuses)
      AND d.created_at >= rp.since AND d.created_at < COALESCE(rp.until, 'infinity'::timestamptz)
      AND (rp.after_created_at IS NULL OR (d.created_at, d.id) > (rp.after_created_at, rp.after_id))
    ORDER BY d.created_at, d.id
    LIMIT sqlc.arg(batch_size)
), sendable AS (
    SELECT n.* FROM next n
    WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries ok
                      WHERE ok.subscription_id = n.subscription_id AND ok.event_id = n.event_id AND ok.status = 'succeeded')
), ins AS (
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        is_test, redelivery_of, payload, body_name, workflow_id, next_attempt_at, sequence)
    SELECT webhook_delivery_id(now(), sqlc.arg(replay_id)::text || '/' || s.id),
        s.account_id, s.subscription_id, s.event_id, s.event_type, s.job_id, s.run_id, false, s.id, s.payload, s.body_name, '',
        -- due in the originals' order, so they are sent oldest first
        now() + (row_number() OVER (ORDER BY s.created_at, s.id)) * interval '1 microsecond', s.sequence
    FROM sendable s
    ON CONFLICT (id) DO NOTHING
    RETURNING id
), last AS (
    SELECT created_at, id FROM next ORDER BY created_at DESC, id DESC LIMIT 1
), moved AS (
    UPDATE webhook_replays r
    SET after_created_at = COALESCE((SELECT created_at FROM last), r.after_created_at),
        after_id = COALESCE((SELECT id FROM last), r.after_id),
        sent = r.sent + (SELECT count(*) FROM ins),
        status = CASE WHEN r.status = 'running' AND (SELECT count(*) FROM next) < sqlc.arg(batch_size) THEN 'completed' ELSE r.status END,
        finished_at = CASE WHEN r.status = 'running' AND (SELECT count(*) FROM next) < sqlc.arg(batch_size) THEN now() ELSE r.finished_at END
    FROM rp WHERE r.id = rp.id
    RETURNING r.status, r.subscription_id, r.account_id
)
SELECT (SELECT count(*) FROM ins)::int AS sent, moved.status, moved.subscription_id, moved.account_id,
    COALESCE((SELECT s.lane_key FROM webhook_subscriptions s WHERE s.id = moved.subscription_id), 0)::int AS lane_key
FROM moved;

-- name: CountReplayable :one
-- How many deliveries a replay of [since, ∞) with statuses would send now.
SELECT count(*)::bigint FROM webhook_deliveries d
WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id) AND NOT d.is_test
  AND d.status = ANY (sqlc.arg(statuses)::text[]) AND d.created_at >= sqlc.arg(since)::timestamptz
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries ok
                  WHERE ok.subscription_id = d.subscription_id AND ok.event_id = d.event_id AND ok.status = 'succeeded');
