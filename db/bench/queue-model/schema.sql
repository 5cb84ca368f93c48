-- The model's tables (db/bench/queue-model/run): deliveries_now is
-- webhook_deliveries with its indexes as migrations 00003-00031 leave them;
-- deliveries_queued keeps the record's indexes only, and delivery_queue
-- holds the due indexes for the pending rows.
DROP TABLE IF EXISTS deliveries_now, deliveries_queued, delivery_queue;
CREATE TABLE deliveries_now (
  id text PRIMARY KEY, account_id bigint NOT NULL, subscription_id text NOT NULL, event_id text NOT NULL,
  event_type text NOT NULL, job_id text NOT NULL, run_id text NOT NULL DEFAULT '', lane_key int NOT NULL,
  route text, status text NOT NULL DEFAULT 'pending', attempt_count int NOT NULL DEFAULT 0, max_attempts int NOT NULL DEFAULT 6,
  last_status_code int NOT NULL DEFAULT 0, last_error text NOT NULL DEFAULT '', retry_delay_ms bigint NOT NULL DEFAULT 0,
  next_attempt_at timestamptz, leased_until timestamptz, payload bytea, body_name text, sequence bigint,
  redelivery_of text, workflow_id text NOT NULL DEFAULT '', created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(), completed_at timestamptz) WITH (fillfactor = 70);
CREATE INDEX ON deliveries_now (subscription_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_now (created_at);
CREATE INDEX ON deliveries_now (account_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_now (account_id, job_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_now (account_id, event_id);
CREATE INDEX ON deliveries_now (account_id, run_id);
CREATE UNIQUE INDEX ON deliveries_now (subscription_id, sequence) WHERE sequence IS NOT NULL AND redelivery_of IS NULL;
CREATE INDEX ON deliveries_now (subscription_id, next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX ON deliveries_now (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX ON deliveries_now (lane_key, next_attempt_at) WHERE next_attempt_at IS NOT NULL AND route = 'shared';
CREATE INDEX ON deliveries_now (subscription_id) WHERE route = 'held' AND next_attempt_at IS NOT NULL;
CREATE INDEX ON deliveries_now (subscription_id, run_id) WHERE next_attempt_at IS NOT NULL AND run_id <> '';

CREATE TABLE deliveries_queued (LIKE deliveries_now INCLUDING DEFAULTS) WITH (fillfactor = 70);
ALTER TABLE deliveries_queued ADD PRIMARY KEY (id);
CREATE INDEX ON deliveries_queued (subscription_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_queued (created_at);
CREATE INDEX ON deliveries_queued (account_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_queued (account_id, job_id, created_at DESC, id DESC);
CREATE INDEX ON deliveries_queued (account_id, event_id);
CREATE INDEX ON deliveries_queued (account_id, run_id);
CREATE UNIQUE INDEX ON deliveries_queued (subscription_id, sequence) WHERE sequence IS NOT NULL AND redelivery_of IS NULL;
CREATE TABLE delivery_queue (delivery_id text PRIMARY KEY, subscription_id text NOT NULL, lane_key int NOT NULL, route text NOT NULL,
  run_id text NOT NULL DEFAULT '', next_attempt_at timestamptz NOT NULL, leased_until timestamptz, attempt int NOT NULL DEFAULT 0)
  WITH (fillfactor = 50);
CREATE INDEX ON delivery_queue (subscription_id, next_attempt_at);
CREATE INDEX ON delivery_queue (next_attempt_at);
CREATE INDEX ON delivery_queue (lane_key, next_attempt_at) WHERE route = 'shared';
CREATE INDEX ON delivery_queue (subscription_id) WHERE route = 'held';
CREATE INDEX ON delivery_queue (subscription_id, run_id) WHERE run_id <> '';
