-- The variant: a delivery not final lives whole in an unpartitioned table
-- (the queue's place, with the queue's indexes and the list indexes the
-- API would need to show it), and is written to the partitioned records
-- once, when final. The records' queue triggers go.
DROP TRIGGER webhook_delivery_queue_inserted ON webhook_deliveries;
DROP TRIGGER webhook_delivery_queue_updated ON webhook_deliveries;
DROP TRIGGER webhook_delivery_queue_deleted ON webhook_deliveries;
CREATE TABLE webhook_delivery_pending (LIKE webhook_deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    lane_key SMALLINT NOT NULL DEFAULT 0) WITH (fillfactor = 50);
ALTER TABLE webhook_delivery_pending ADD PRIMARY KEY (id);
CREATE INDEX ON webhook_delivery_pending (subscription_id, next_attempt_at, id);
CREATE INDEX ON webhook_delivery_pending (lane_key, next_attempt_at) WHERE route = 'shared';
CREATE INDEX ON webhook_delivery_pending (subscription_id) WHERE route = 'held';
CREATE INDEX ON webhook_delivery_pending (subscription_id, run_id) WHERE run_id <> '';
