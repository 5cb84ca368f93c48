-- +goose Up
-- Events are made durable at ingestion, many per statement, and each
-- matching webhook's delivery is claimed in the same statement (one row per
-- event x webhook, unique). A webhook's lane (a Temporal workflow) takes its
-- due deliveries in pages: next_attempt_at says when a delivery is due, and
-- is NULL once it is final.
CREATE TABLE webhook_events (
    id          TEXT        PRIMARY KEY,                    -- wev_...
    account_id  BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    event_type  TEXT        NOT NULL,
    job_id      TEXT        NOT NULL,
    run_id      TEXT        NOT NULL,
    data        BYTEA       NOT NULL,                       -- the payload's "data" object, as JSON
    tool_name   TEXT        NOT NULL,                       -- the "<tool>Version" prefix at ingestion
    accepted_at TIMESTAMPTZ NOT NULL DEFAULT now(),         -- also the payload's timestamp
    trace_parent TEXT       NOT NULL DEFAULT ''             -- W3C traceparent of the ingestion, for the attempts' spans
);
CREATE INDEX webhook_events_accepted_idx ON webhook_events (accepted_at);

ALTER TABLE webhook_deliveries
    ALTER COLUMN payload DROP NOT NULL,                     -- fixed by the first attempt
    ADD COLUMN max_attempts    INTEGER     NOT NULL DEFAULT 6,
    ADD COLUMN next_attempt_at TIMESTAMPTZ,
    ADD COLUMN workflow_run_id TEXT        NOT NULL DEFAULT '';
UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status IN ('pending', 'retrying');

-- A lane's due deliveries, in the order it takes them.
CREATE INDEX webhook_deliveries_due_idx
    ON webhook_deliveries (subscription_id, next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
-- Deliveries overdue across all lanes (the stalled-lane sweeper).
CREATE INDEX webhook_deliveries_overdue_idx
    ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
-- The delivery claim is the primary key: an event's delivery to a webhook
-- has an id derived from both (IngestEvents, deliveries.DeliveryID), so it
-- is stored once however often and concurrently the event is ingested.

-- +goose Down
DROP INDEX webhook_deliveries_overdue_idx;
DROP INDEX webhook_deliveries_due_idx;
DELETE FROM webhook_deliveries WHERE payload IS NULL;
ALTER TABLE webhook_deliveries
    DROP COLUMN workflow_run_id,
    DROP COLUMN next_attempt_at,
    DROP COLUMN max_attempts,
    ALTER COLUMN payload SET NOT NULL;
DROP TABLE webhook_events;
