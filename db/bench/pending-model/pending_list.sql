-- As pending.sql, and the records' list indexes on the pending table too
-- (by account, webhook, event, run and job), for the API to list pending
-- deliveries without reading the whole table.
\ir pending.sql
CREATE INDEX ON webhook_delivery_pending (account_id, created_at DESC);
CREATE INDEX ON webhook_delivery_pending (subscription_id, created_at DESC);
CREATE INDEX ON webhook_delivery_pending (account_id, event_id);
CREATE INDEX ON webhook_delivery_pending (account_id, run_id);
CREATE INDEX ON webhook_delivery_pending (account_id, job_id, created_at DESC);
