-- 100 webhooks of one account, in the freshly migrated database the run
-- script makes for each run, and the sequence the deliveries' ids take.
INSERT INTO accounts (identifier, name, plan) VALUES ('model', 'model', 'team');
INSERT INTO webhook_subscriptions (id, account_id, name, client_url, event_types, secret_key_id, secret_ciphertext, created_at, updated_at)
SELECT 'wsu_model' || lpad(n::text, 22, '0'), (SELECT id FROM accounts), 'm', 'http://127.0.0.1:' || (9000 + n % 10) || '/x',
       ARRAY['job.run.completed'], 'k', '\x00', now(), now()
FROM generate_series(1, 100) n;
CREATE SEQUENCE model_ids;
VACUUM ANALYZE;
