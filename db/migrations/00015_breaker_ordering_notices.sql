-- +goose Up
-- Outage-aware delivery.
--
-- Endpoint breaker: attempt_failures_in_a_row counts a webhook's attempts in
-- a row that failed the way a receiver that is down fails (no answer, a
-- timeout, a 5xx, 408 or 429); any other answer resets it. At the
-- threshold the breaker opens: the webhook's route becomes 'held' (nobody
-- attempts its deliveries; they wait, their attempts unspent) and its own
-- lane workflow sends one probe (a real pending delivery) per backoff step
-- (breaker_next_probe_at). A probe that succeeds closes the breaker
-- (breaker_closed_at: the drain's ramp starts there).
--
-- Incidents: an incident starts when a breaker opens with none going on,
-- is announced to the account (account_notices) once it has lasted the
-- notice threshold, and ends once the breaker stayed closed for the quiet
-- period (announced: one notice says it recovered).
--
-- Per-run ordering: a delivery of a run waits while an earlier one of the
-- same run is pending for the same webhook; order_released_at says when
-- one went anyway after the bound.

ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_delivery_route_check;
ALTER TABLE webhook_subscriptions
    ADD CONSTRAINT webhook_subscriptions_delivery_route_check
        CHECK (delivery_route IN ('shared', 'own', 'paused', 'held')),
    ADD COLUMN attempt_failures_in_a_row INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN breaker_opened_at TIMESTAMPTZ,
    ADD COLUMN breaker_next_probe_at TIMESTAMPTZ,
    ADD COLUMN breaker_failed_probes INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN breaker_closed_at TIMESTAMPTZ,
    ADD COLUMN incident_started_at TIMESTAMPTZ,
    ADD COLUMN incident_announced_at TIMESTAMPTZ;

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_route_check;
ALTER TABLE webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_route_check CHECK (route IN ('shared', 'own', 'paused', 'held')),
    ADD COLUMN order_released_at TIMESTAMPTZ;

-- The sweeper's safety net: held webhooks whose probe is overdue.
CREATE INDEX webhook_subscriptions_probe_due_idx
    ON webhook_subscriptions (breaker_next_probe_at)
    WHERE delivery_route = 'held';

-- Incidents still going on (to announce or to end).
CREATE INDEX webhook_subscriptions_incident_idx
    ON webhook_subscriptions (incident_started_at)
    WHERE incident_started_at IS NOT NULL;

-- Held deliveries (an open breaker's), by webhook: the sweeper finds those
-- left held after their breaker closed.
CREATE INDEX webhook_deliveries_held_idx
    ON webhook_deliveries (subscription_id)
    WHERE route = 'held' AND next_attempt_at IS NOT NULL;

-- Per-run ordering: a webhook's pending deliveries of one run.
CREATE INDEX webhook_deliveries_run_pending_idx
    ON webhook_deliveries (subscription_id, run_id)
    WHERE next_attempt_at IS NOT NULL AND run_id <> '';

-- Where an account hears of its webhooks' incidents: one endpoint per
-- account, its secret sealed like an hmac_secret.
CREATE TABLE account_notification_endpoints (
    account_id BIGINT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    secret_key_id TEXT NOT NULL,
    secret_ciphertext BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per notice: at most one of each kind per incident of a webhook
-- (the unique key), sent by a workflow of its own.
CREATE TABLE account_notices (
    id TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    subscription_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('webhook.breaker_opened', 'webhook.disabled', 'webhook.recovered')),
    incident_started_at TIMESTAMPTZ NOT NULL,
    payload BYTEA NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'no_endpoint')),
    attempt_count INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (subscription_id, kind, incident_started_at)
);

CREATE INDEX account_notices_account_idx ON account_notices (account_id, created_at DESC);

-- +goose Down
DROP TABLE account_notices;
DROP TABLE account_notification_endpoints;
DROP INDEX webhook_deliveries_run_pending_idx;
DROP INDEX webhook_deliveries_held_idx;
DROP INDEX webhook_subscriptions_incident_idx;
DROP INDEX webhook_subscriptions_probe_due_idx;
UPDATE webhook_deliveries SET route = 'own' WHERE route = 'held';
UPDATE webhook_subscriptions SET delivery_route = 'own' WHERE delivery_route = 'held';
ALTER TABLE webhook_deliveries
    DROP COLUMN order_released_at,
    DROP CONSTRAINT webhook_deliveries_route_check,
    ADD CONSTRAINT webhook_deliveries_route_check CHECK (route IN ('shared', 'own', 'paused'));
ALTER TABLE webhook_subscriptions
    DROP COLUMN incident_announced_at,
    DROP COLUMN incident_started_at,
    DROP COLUMN breaker_closed_at,
    DROP COLUMN breaker_failed_probes,
    DROP COLUMN breaker_next_probe_at,
    DROP COLUMN breaker_opened_at,
    DROP COLUMN attempt_failures_in_a_row,
    DROP CONSTRAINT webhook_subscriptions_delivery_route_check,
    ADD CONSTRAINT webhook_subscriptions_delivery_route_check CHECK (delivery_route IN ('shared', 'own', 'paused'));
