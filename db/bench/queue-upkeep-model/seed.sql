-- 100 webhooks of one account and 2,000 deliveries due, in batches of five
-- (model_batches), in the freshly migrated database the run script makes
-- for each run.
INSERT INTO accounts (identifier, name, plan) VALUES ('model', 'model', 'team');
INSERT INTO webhook_subscriptions (id, account_id, name, client_url, event_types, secret_key_id, secret_ciphertext, created_at, updated_at)
SELECT 'wsu_model' || lpad(n::text, 22, '0'), (SELECT id FROM accounts), 'm', 'http://127.0.0.1:' || (9000 + n % 10) || '/x',
       ARRAY['job.run.completed'], 'k', '\x00', now(), now()
FROM generate_series(1, 100) n;
CREATE TABLE model_batches (k int PRIMARY KEY, ids text[] NOT NULL);
WITH d AS (
  SELECT n, 'wdl_' || lpad(to_hex(extract(epoch FROM now())::int), 8, '0') || lpad(to_hex(n), 18, '0') AS id FROM generate_series(0, 1999) n
)
INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, workflow_id, next_attempt_at, status)
SELECT d.id, (SELECT id FROM accounts), 'wsu_model' || lpad((1 + d.n % 100)::text, 22, '0'), 'wev_model' || d.n, 'job.run.completed', '', now(), 'pending'
FROM d;
INSERT INTO model_batches SELECT n / 5, array_agg(id ORDER BY id) FROM (SELECT row_number() OVER (ORDER BY id) - 1 AS n, id FROM webhook_deliveries) x GROUP BY n / 5;
VACUUM ANALYZE;
