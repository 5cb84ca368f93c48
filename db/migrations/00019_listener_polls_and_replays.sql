-- +goose Up
-- Each long poll of a listener is a row of its own, so one `listen` leaving
-- does not end another's: the relay holds deliveries for a listener while
-- any of its polls counts (an open one, or one that answered less than the
-- time the CLI takes to poll again ago), and the bounds on concurrent
-- polls count the open ones. A poll whose client goes away deletes its row.
CREATE TABLE webhook_listener_polls (
    id            BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    listener_id   TEXT        NOT NULL REFERENCES webhook_listeners (id) ON DELETE CASCADE,
    account_id    BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    polling_until TIMESTAMPTZ NOT NULL, -- the listener counts as polled until then
    ended_at      TIMESTAMPTZ           -- the poll answered; NULL while it waits
);
CREATE INDEX webhook_listener_polls_listener_idx ON webhook_listener_polls (listener_id, polling_until);
CREATE INDEX webhook_listener_polls_open_idx ON webhook_listener_polls (account_id, polling_until) WHERE ended_at IS NULL;
ALTER TABLE webhook_listeners DROP COLUMN polling_until;

-- The signed requests the relay took, by listener and the hash of their
-- signed webhook-id and webhook-timestamp: the same request again is a
-- replay and refused. Kept until its timestamp is out of the relay's
-- tolerance.
CREATE TABLE webhook_listener_relayed (
    listener_id  TEXT        NOT NULL REFERENCES webhook_listeners (id) ON DELETE CASCADE,
    request_hash BYTEA       NOT NULL, -- SHA-256 of "{webhook-id}.{webhook-timestamp}"
    forget_after TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (listener_id, request_hash)
);
CREATE INDEX webhook_listener_relayed_forget_idx ON webhook_listener_relayed (forget_after);

-- An attempt's headers carry the webhook's secret header values: stored
-- sealed (AES-256-GCM, additional data "listener-attempt/{id}/headers"),
-- like the delivery settings they come from. Rows live for minutes; those
-- of the previous shape go.
DELETE FROM webhook_listener_attempts;
ALTER TABLE webhook_listener_attempts
    DROP COLUMN headers,
    ADD COLUMN headers_key_id     TEXT  NOT NULL,
    ADD COLUMN headers_ciphertext BYTEA NOT NULL;
-- The attempts a relay holds, counted per account.
CREATE INDEX webhook_listener_attempts_held_idx
    ON webhook_listener_attempts (listener_id) WHERE answered_at IS NULL AND closed_at IS NULL;

-- +goose Down
DROP INDEX webhook_listener_attempts_held_idx;
DELETE FROM webhook_listener_attempts;
ALTER TABLE webhook_listener_attempts
    DROP COLUMN headers_key_id,
    DROP COLUMN headers_ciphertext,
    ADD COLUMN headers JSONB NOT NULL;
DROP TABLE webhook_listener_relayed;
ALTER TABLE webhook_listeners ADD COLUMN polling_until TIMESTAMPTZ;
DROP TABLE webhook_listener_polls;
