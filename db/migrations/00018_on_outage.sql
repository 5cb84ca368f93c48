-- +goose Up
-- What a webhook's deliveries do while its endpoint breaker is open
-- (on_outage): 'retry' keeps every delivery on its retry schedule, so it
-- ends 'failed' after its attempts as the spec says; 'hold' moves them to
-- the route 'held', where they wait, attempts unspent, for a probe to be
-- answered. NULL: the operator's default (DELIVERY_ON_OUTAGE).
ALTER TABLE webhook_delivery_settings
    ADD COLUMN on_outage TEXT,
    ADD CONSTRAINT webhook_delivery_settings_on_outage CHECK (on_outage IN ('retry', 'hold'));

-- Open breakers, whatever their webhooks' deliveries do (the metric, the
-- web UI's list): a breaker in retry mode is open on a route other than
-- 'held'.
CREATE INDEX webhook_subscriptions_breaker_open_idx
    ON webhook_subscriptions (account_id)
    WHERE breaker_opened_at IS NOT NULL;

-- +goose Down
DROP INDEX webhook_subscriptions_breaker_open_idx;
ALTER TABLE webhook_delivery_settings
    DROP CONSTRAINT webhook_delivery_settings_on_outage,
    DROP COLUMN on_outage;
