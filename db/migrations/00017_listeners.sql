-- +goose Up
-- A listener (webhooks listen) is an ordinary webhook whose client_url is
-- the API's relay, RELAY_BASE_URL/relay/v1/{token}. The token only routes:
-- the relay verifies each delivery's signature with the webhook's secret.
-- One listener per account and name; `listen` with the same name reuses it.
CREATE TABLE webhook_listeners (
    id               TEXT        PRIMARY KEY,                -- wls_...
    account_id       BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             TEXT        NOT NULL,
    subscription_id  TEXT        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    relay_token_hash BYTEA       NOT NULL UNIQUE,            -- SHA-256 of the token in client_url
    -- A `listen` is taking deliveries until then: each long poll moves it
    -- past its own end, and a poll whose client went away sets it to now.
    polling_until    TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT webhook_listeners_id_format CHECK (id LIKE 'wls\_%'),
    CONSTRAINT webhook_listeners_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
    CONSTRAINT webhook_listeners_name_unique UNIQUE (account_id, name)
);

-- One attempt of a delivery on its way through the relay: the API that
-- holds the worker's POST stores it, the API that serves the listener's
-- long poll claims it, the listener's answer is written back, and the
-- holder answers the worker with it. Rows live for seconds; closed rows
-- are deleted a few minutes later.
CREATE TABLE webhook_listener_attempts (
    id             TEXT        PRIMARY KEY,                  -- wla_...
    listener_id    TEXT        NOT NULL REFERENCES webhook_listeners (id) ON DELETE CASCADE,
    delivery_id    TEXT        NOT NULL,                     -- Webhook-Delivery-Id, for display
    event_type     TEXT        NOT NULL,
    attempt        INTEGER     NOT NULL,
    headers        JSONB       NOT NULL,                     -- the delivery's headers, as received
    body           BYTEA       NOT NULL,                     -- the exact body
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    answer_by      TIMESTAMPTZ NOT NULL,                     -- the holder answers the worker itself then
    claimed_at     TIMESTAMPTZ,
    answered_at    TIMESTAMPTZ,
    closed_at      TIMESTAMPTZ,                              -- the holder stopped waiting
    status_code    INTEGER,                                  -- the local endpoint's answer ...
    answer_headers JSONB,
    answer_body    BYTEA,
    answer_error   TEXT,                                     -- ... or why there was none
    answer_ms      INTEGER,
    CONSTRAINT webhook_listener_attempts_id_format CHECK (id LIKE 'wla\_%')
);
-- A listener's next attempt to hand out, oldest first.
CREATE INDEX webhook_listener_attempts_waiting_idx
    ON webhook_listener_attempts (listener_id, created_at) WHERE claimed_at IS NULL AND closed_at IS NULL;
-- Cleanup of old rows.
CREATE INDEX webhook_listener_attempts_answer_by_idx ON webhook_listener_attempts (answer_by);

-- +goose Down
DROP TABLE webhook_listener_attempts;
DROP TABLE webhook_listeners;
