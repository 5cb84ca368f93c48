-- +goose Up
-- An event that matches an inactive webhook is recorded as a skipped
-- delivery (no POST), so what the receiver missed can be sent later.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
    CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped'));

-- A webhook whose deliveries keep failing is deactivated automatically:
-- failed deliveries in a row and since when (reset by a success), and when
-- and why it was disabled (cleared when it is activated again).
ALTER TABLE webhook_subscriptions
    ADD COLUMN failed_deliveries_in_a_row INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN failing_since              TIMESTAMPTZ,
    ADD COLUMN disabled_at                TIMESTAMPTZ,
    ADD COLUMN disabled_reason            TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_subscriptions
    DROP COLUMN disabled_reason,
    DROP COLUMN disabled_at,
    DROP COLUMN failing_since,
    DROP COLUMN failed_deliveries_in_a_row;
UPDATE webhook_deliveries SET status = 'cancelled' WHERE status = 'skipped';
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
    CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled'));
