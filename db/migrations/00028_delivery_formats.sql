-- +goose Up
-- How a webhook's deliveries are shaped and chosen (issue 38), on its
-- delivery settings; no row still means every default.
--
-- format: the body sent: 'standard' is the spec's body unchanged; 'slack',
-- 'teams' and 'pagerduty' are built for that receiver from the same event.
-- notify_on: 'every' delivers every matching event (the spec's outcome);
-- 'state_change' only a job's first failure and its recovery.
-- filter: a CEL expression over the event (package eventfilter), NULL for
-- none; checked by the API before it is stored.
-- The PagerDuty routing key is a secret, sealed like a secret header's
-- value (additional data "{subscription_id}/pagerduty-routing-key").
ALTER TABLE webhook_delivery_settings
    ADD COLUMN format TEXT NOT NULL DEFAULT 'standard',
    ADD COLUMN notify_on TEXT NOT NULL DEFAULT 'every',
    ADD COLUMN filter TEXT,
    ADD COLUMN pagerduty_routing_key_key_id TEXT,
    ADD COLUMN pagerduty_routing_key_ciphertext BYTEA,
    ADD CONSTRAINT webhook_delivery_settings_format CHECK (format IN ('standard', 'slack', 'teams', 'pagerduty')),
    ADD CONSTRAINT webhook_delivery_settings_notify_on CHECK (notify_on IN ('every', 'state_change')),
    ADD CONSTRAINT webhook_delivery_settings_filter CHECK (filter IS NULL OR octet_length(filter) BETWEEN 1 AND 2000),
    ADD CONSTRAINT webhook_delivery_settings_routing_key_whole CHECK (
        (pagerduty_routing_key_key_id IS NULL) = (pagerduty_routing_key_ciphertext IS NULL)),
    ADD CONSTRAINT webhook_delivery_settings_pagerduty_key CHECK (
        format <> 'pagerduty' OR pagerduty_routing_key_key_id IS NOT NULL);

-- +goose Down
ALTER TABLE webhook_delivery_settings
    DROP CONSTRAINT webhook_delivery_settings_pagerduty_key,
    DROP CONSTRAINT webhook_delivery_settings_routing_key_whole,
    DROP CONSTRAINT webhook_delivery_settings_filter,
    DROP CONSTRAINT webhook_delivery_settings_notify_on,
    DROP CONSTRAINT webhook_delivery_settings_format,
    DROP COLUMN pagerduty_routing_key_ciphertext,
    DROP COLUMN pagerduty_routing_key_key_id,
    DROP COLUMN filter,
    DROP COLUMN notify_on,
    DROP COLUMN format;
