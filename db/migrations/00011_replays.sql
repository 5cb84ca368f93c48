-- +goose Up
-- A replay sends a webhook's failed or skipped deliveries of a time range
-- again, oldest first, at a bounded rate; its workflow (replay/{id}) moves
-- the cursor (after_created_at, after_id) one batch at a time.
CREATE TABLE webhook_replays (
    id               TEXT        PRIMARY KEY,                -- wrp_...
    account_id       BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    subscription_id  TEXT        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    since            TIMESTAMPTZ NOT NULL,
    until            TIMESTAMPTZ,
    statuses         TEXT[]      NOT NULL,
    status           TEXT        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'cancelled')),
    total            INTEGER     NOT NULL,
    sent             INTEGER     NOT NULL DEFAULT 0,
    after_created_at TIMESTAMPTZ,
    after_id         TEXT        NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at      TIMESTAMPTZ
);
CREATE INDEX webhook_replays_subscription_idx ON webhook_replays (subscription_id, created_at DESC);

-- +goose Down
DROP TABLE webhook_replays;
