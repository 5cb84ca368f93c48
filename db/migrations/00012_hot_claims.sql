-- +goose Up
-- A claim leases a delivery in a column of its own, not indexed, so the
-- claim's update of the row is HOT (no new index entries): the lease used
-- to move next_attempt_at, which is indexed. Room for HOT updates in each
-- page. The overdue index goes: the sweeper reads the lanes' partial index,
-- which holds only deliveries not final.
ALTER TABLE webhook_deliveries ADD COLUMN leased_until TIMESTAMPTZ;
ALTER TABLE webhook_deliveries SET (fillfactor = 85);
DROP INDEX webhook_deliveries_overdue_idx;

-- +goose Down
CREATE INDEX webhook_deliveries_overdue_idx
    ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
ALTER TABLE webhook_deliveries RESET (fillfactor);
ALTER TABLE webhook_deliveries DROP COLUMN leased_until;
