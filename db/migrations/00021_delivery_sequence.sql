-- +goose Up
-- A webhook numbers its deliveries of job-run events 1, 2, 3, ... in
-- ingestion order, with no gap (webhook-sequence, the feed). The counter is
-- a row of its own, not a column of webhook_subscriptions: every group
-- commit that makes a delivery for the webhook updates it, and the
-- webhook's row is locked often by attempt records, which ingestion must
-- not wait for. The row is narrow and unindexed but for its key, so its
-- updates are HOT; the fill factor leaves them room on the page.
CREATE TABLE webhook_delivery_sequences (
    subscription_id TEXT   PRIMARY KEY REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    last_sequence   BIGINT NOT NULL CHECK (last_sequence > 0)
) WITH (fillfactor = 50);

-- The delivery's number; NULL for test deliveries (and for deliveries made
-- before numbering existed). A redelivery or replay carries its original's.
ALTER TABLE webhook_deliveries ADD COLUMN sequence BIGINT;

-- The feed reads a webhook's numbered deliveries in order; unique, so a
-- number is never given twice (redeliveries repeat their original's).
CREATE UNIQUE INDEX webhook_deliveries_sequence_idx
    ON webhook_deliveries (subscription_id, sequence)
    WHERE sequence IS NOT NULL AND redelivery_of IS NULL;

-- +goose Down
DROP INDEX webhook_deliveries_sequence_idx;
ALTER TABLE webhook_deliveries DROP COLUMN sequence;
DROP TABLE webhook_delivery_sequences;
