-- Three updates of five deliveries each, as a claim (the lease), a record
-- (final) and a re-queue (due again) would: the queue kept by the trigger.
\set k random(0, 399)
UPDATE webhook_deliveries SET leased_until = now() + interval '15 seconds', workflow_id = 'shard-1' WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]);
UPDATE webhook_deliveries SET next_attempt_at = NULL, status = 'succeeded', leased_until = NULL WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]);
UPDATE webhook_deliveries SET next_attempt_at = now(), status = 'pending', workflow_id = '' WHERE id = ANY ((SELECT ids FROM model_batches WHERE k = :k)::text[]);
