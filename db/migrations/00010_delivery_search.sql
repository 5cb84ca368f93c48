-- +goose Up
-- Delivery search across an account's webhooks (GET .../webhooks/deliveries,
-- the web UI's search box). Every search is driven by one of these, so none
-- reads all of an account's deliveries to find a page. Rows are updated on
-- every claim and attempt and those updates are not HOT (next_attempt_at is
-- indexed), so each index here is written on each of them: there is one per
-- way of searching and no more. Status, event type and time are filters on
-- whichever index drives the search, not indexes of their own.
--
-- Newest first across the account, with since/until as a range.
CREATE INDEX webhook_deliveries_account_idx
    ON webhook_deliveries (account_id, created_at DESC, id DESC);
-- A job has many runs: its deliveries are paged in order from the index.
CREATE INDEX webhook_deliveries_account_job_idx
    ON webhook_deliveries (account_id, job_id, created_at DESC, id DESC);
-- An event or a run has a few deliveries (one per webhook, plus tests and
-- redeliveries): they are found by equality and sorted in memory.
CREATE INDEX webhook_deliveries_account_event_idx
    ON webhook_deliveries (account_id, event_id);
CREATE INDEX webhook_deliveries_account_run_idx
    ON webhook_deliveries (account_id, run_id);

-- +goose Down
DROP INDEX webhook_deliveries_account_run_idx;
DROP INDEX webhook_deliveries_account_event_idx;
DROP INDEX webhook_deliveries_account_job_idx;
DROP INDEX webhook_deliveries_account_idx;
