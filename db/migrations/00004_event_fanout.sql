-- +goose Up
-- The event workflow makes the first attempt of each of its deliveries
-- itself, so several delivery records share its workflow id; a delivery
-- handed off for retries is then re-pointed at its own delivery workflow.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_workflow_id_key;
-- Matching pages through an account's subscriptions for every job in id
-- order (an event workflow takes one page per run), so the index carries id.
DROP INDEX webhook_subscriptions_all_jobs_idx;
CREATE INDEX webhook_subscriptions_all_jobs_idx
    ON webhook_subscriptions (account_id, id)
    WHERE active AND deleted_at IS NULL AND cardinality(job_ids) = 0;

-- +goose Down
DROP INDEX webhook_subscriptions_all_jobs_idx;
CREATE INDEX webhook_subscriptions_all_jobs_idx
    ON webhook_subscriptions (account_id)
    WHERE active AND deleted_at IS NULL AND cardinality(job_ids) = 0;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_workflow_id_key UNIQUE (workflow_id);
