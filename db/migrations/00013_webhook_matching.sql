-- +goose Up
-- Matching an event without reading every webhook of its account: the jobs
-- each webhook names, one row per (account, job, webhook), so an event's
-- webhooks for its job are one index lookup. A trigger keeps the table in
-- step with webhook_subscriptions.job_ids (in the same transaction as the
-- change); deleting a webhook deletes its rows.
CREATE TABLE webhook_job_matches (
    account_id      BIGINT NOT NULL,
    job_id          BIGINT NOT NULL,
    subscription_id TEXT   NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    PRIMARY KEY (account_id, job_id, subscription_id)
);
-- The trigger and the cascade find a webhook's rows by it.
CREATE INDEX webhook_job_matches_subscription_idx ON webhook_job_matches (subscription_id);

-- +goose StatementBegin
CREATE FUNCTION webhook_job_matches_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.job_ids IS NOT DISTINCT FROM OLD.job_ids AND NEW.account_id = OLD.account_id THEN
            RETURN NULL;
        END IF;
        DELETE FROM webhook_job_matches WHERE subscription_id = OLD.id;
    END IF;
    INSERT INTO webhook_job_matches (account_id, job_id, subscription_id)
    SELECT DISTINCT NEW.account_id, j, NEW.id FROM unnest(NEW.job_ids) j;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_job_matches_sync
    AFTER INSERT OR UPDATE OF job_ids, account_id ON webhook_subscriptions
    FOR EACH ROW EXECUTE FUNCTION webhook_job_matches_sync();

INSERT INTO webhook_job_matches (account_id, job_id, subscription_id)
SELECT DISTINCT s.account_id, j, s.id FROM webhook_subscriptions s, unnest(s.job_ids) j;

-- ... and the webhooks for every job, active or not (inactive ones get
-- skipped deliveries). This replaces the all-jobs index for active
-- webhooks only; the GIN index on job_ids goes, nothing reads it.
DROP INDEX webhook_subscriptions_all_jobs_idx;
DROP INDEX webhook_subscriptions_job_ids_idx;
CREATE INDEX webhook_subscriptions_all_jobs_idx
    ON webhook_subscriptions (account_id, id)
    WHERE deleted_at IS NULL AND cardinality(job_ids) = 0;

-- +goose Down
DROP INDEX webhook_subscriptions_all_jobs_idx;
CREATE INDEX webhook_subscriptions_all_jobs_idx
    ON webhook_subscriptions (account_id, id)
    WHERE active AND deleted_at IS NULL AND cardinality(job_ids) = 0;
CREATE INDEX webhook_subscriptions_job_ids_idx
    ON webhook_subscriptions USING gin (job_ids)
    WHERE active AND deleted_at IS NULL;
DROP TRIGGER webhook_job_matches_sync ON webhook_subscriptions;
DROP FUNCTION webhook_job_matches_sync();
DROP TABLE webhook_job_matches;
