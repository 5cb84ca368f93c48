-- +goose Up
CREATE TABLE webhook_subscriptions (
    id                TEXT        PRIMARY KEY,               -- wsu_...
    account_id        BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name              TEXT        NOT NULL,
    description       TEXT        NOT NULL DEFAULT '',
    client_url        TEXT        NOT NULL,
    event_types       TEXT[]      NOT NULL,
    job_ids           BIGINT[]    NOT NULL DEFAULT '{}',     -- empty: every job of the account
    active            BOOLEAN     NOT NULL DEFAULT true,
    secret_key_id     TEXT        NOT NULL,                  -- which encryption key sealed the secret
    secret_ciphertext BYTEA       NOT NULL,                  -- AES-256-GCM(hmac_secret), never plain
    http_status_code  INTEGER     NOT NULL DEFAULT 0,
    dispatched_at     TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    deleted_at        TIMESTAMPTZ,                           -- soft delete keeps delivery history consistent
    -- Defence in depth: the API validates all of this first, with clear errors.
    CONSTRAINT webhook_subscriptions_id_format CHECK (id LIKE 'wsu\_%'),
    CONSTRAINT webhook_subscriptions_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
    CONSTRAINT webhook_subscriptions_description_length CHECK (char_length(description) <= 1000),
    CONSTRAINT webhook_subscriptions_client_url_length CHECK (char_length(client_url) BETWEEN 1 AND 2048),
    CONSTRAINT webhook_subscriptions_event_types_present CHECK (cardinality(event_types) >= 1),
    CONSTRAINT webhook_subscriptions_job_ids_limit CHECK (cardinality(job_ids) <= 1000)
);

-- Listing: per account, creation order.
CREATE INDEX webhook_subscriptions_account_created_idx
    ON webhook_subscriptions (account_id, created_at, id) WHERE deleted_at IS NULL;
-- Matching an event, without scanning an account's subscriptions:
-- subscriptions for all jobs ...
CREATE INDEX webhook_subscriptions_all_jobs_idx
    ON webhook_subscriptions (account_id)
    WHERE active AND deleted_at IS NULL AND cardinality(job_ids) = 0;
-- ... and subscriptions naming the job.
CREATE INDEX webhook_subscriptions_job_ids_idx
    ON webhook_subscriptions USING gin (job_ids)
    WHERE active AND deleted_at IS NULL;

-- +goose Down
DROP TABLE webhook_subscriptions;
