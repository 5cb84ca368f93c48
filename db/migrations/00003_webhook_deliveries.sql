-- +goose Up
-- One row per event x subscription (and per test or redelivery).
CREATE TABLE webhook_deliveries (
    id               TEXT        PRIMARY KEY,                -- wdl_..., also sent as a header
    account_id       BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    subscription_id  TEXT        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id         TEXT        NOT NULL,                   -- wev_...
    event_type       TEXT        NOT NULL,
    job_id           TEXT        NOT NULL DEFAULT '',
    run_id           TEXT        NOT NULL DEFAULT '',
    is_test          BOOLEAN     NOT NULL DEFAULT false,
    redelivery_of    TEXT,
    status           TEXT        NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled')),
    attempt_count    INTEGER     NOT NULL DEFAULT 0,
    last_status_code INTEGER     NOT NULL DEFAULT 0,
    last_error       TEXT        NOT NULL DEFAULT '',
    payload          BYTEA       NOT NULL,                   -- exact body bytes sent on every attempt
    workflow_id      TEXT        NOT NULL UNIQUE,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at     TIMESTAMPTZ
);
CREATE INDEX webhook_deliveries_subscription_idx
    ON webhook_deliveries (subscription_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at);

CREATE TABLE webhook_delivery_attempts (
    delivery_id      TEXT        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt_number   INTEGER     NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL,
    duration_ms      INTEGER     NOT NULL,
    status_code      INTEGER     NOT NULL DEFAULT 0,
    error_kind       TEXT        NOT NULL DEFAULT '',
    error_message    TEXT        NOT NULL DEFAULT '',
    response_snippet TEXT        NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, attempt_number)
);

-- +goose Down
DROP TABLE webhook_delivery_attempts;
DROP TABLE webhook_deliveries;
