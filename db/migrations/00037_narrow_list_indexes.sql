-- +goose Up
-- The three indexes that list deliveries newest first (an account's, a
-- webhook's, an account's for a job) no longer carry the delivery's id
-- after created_at. The id is 30 characters, so it was most of each entry
-- and kept entries of one statement's deliveries (which share created_at,
-- the statement's now()) from being deduplicated into one posting list;
-- the queries still order by (created_at, id), sorting the few deliveries
-- of one instant by id as they read them (an incremental sort). Rebuilding
-- an index of a partitioned table blocks writes to it while every
-- partition's index is built: nothing has shipped yet.
DROP INDEX webhook_deliveries_account_idx;
DROP INDEX webhook_deliveries_account_job_idx;
DROP INDEX webhook_deliveries_subscription_idx;
CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, created_at DESC);
CREATE INDEX webhook_deliveries_account_job_idx ON webhook_deliveries (account_id, job_id, created_at DESC);
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, created_at DESC);

-- An account's latest events (the web UI's filter check) are read from an
-- index of the account's own, rather than by walking every account's
-- events backwards from now until enough of its own turn up: how long it
-- takes no longer depends on other accounts' traffic. Its entries are
-- deduplicated as the others above (one statement's events of an account
-- share accepted_at), so it is no larger than the index of acceptance
-- times it replaces.
DROP INDEX webhook_events_accepted_idx;
CREATE INDEX webhook_events_account_idx ON webhook_events (account_id, accepted_at DESC);

-- +goose Down
DROP INDEX webhook_events_account_idx;
CREATE INDEX webhook_events_accepted_idx ON webhook_events (accepted_at);
DROP INDEX webhook_deliveries_account_idx;
DROP INDEX webhook_deliveries_account_job_idx;
DROP INDEX webhook_deliveries_subscription_idx;
CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_account_job_idx ON webhook_deliveries (account_id, job_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, created_at DESC, id DESC);
