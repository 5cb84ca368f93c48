-- +goose Up
-- Routing at ingestion (issue 38): what IngestEvents needs to apply a
-- webhook's filter and its notify_on: state_change without reading every
-- webhook's settings for every event (docs/delivery.md).

-- Each job's state as a state-change webhook saw it: failing or not since
-- the outcome of one run (outcome_at, then outcome_run_key, orders runs;
-- deliveries.RunOrderKey). IngestEvents changes a row only for a newer
-- outcome, in its ON CONFLICT update, which waits for the row's lock and
-- sees its last committed version: previous_* are the state that update
-- replaced, read back by the same statement to decide which outcomes flip
-- the state (and are delivered).
CREATE TABLE webhook_job_states (
    subscription_id     TEXT        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    job_id              TEXT        NOT NULL,
    failing             BOOLEAN     NOT NULL,
    -- The outcome time of the failure that started the failing streak.
    failing_since       TIMESTAMPTZ,
    outcome_at          TIMESTAMPTZ NOT NULL,
    outcome_run_id      TEXT        NOT NULL,
    outcome_run_key     BYTEA       NOT NULL,
    previous_failing    BOOLEAN     NOT NULL,
    previous_outcome_at TIMESTAMPTZ,
    previous_run_key    BYTEA,
    PRIMARY KEY (subscription_id, job_id),
    CONSTRAINT webhook_job_states_since CHECK (failing = (failing_since IS NOT NULL))
);

-- Whether the webhook delivers state changes only (notify_on
-- 'state_change', or format 'pagerduty', which always does): a copy of its
-- settings on the subscription row, which matching reads anyway, so a
-- webhook without it costs ingestion nothing more.
ALTER TABLE webhook_subscriptions ADD COLUMN notify_state_change BOOLEAN NOT NULL DEFAULT false;

-- A counter per account of changes to what its filters decide: a filter
-- set, changed or removed, or the event types, jobs, name or deletion of a
-- webhook with a filter. Ingestion sends the version its cached filters
-- were read at (0: none); a group naming another version stores nothing
-- and says which accounts to read again. No foreign key: the account's
-- deletion cascades to settings whose trigger bumps this row.
CREATE TABLE webhook_filter_versions (
    account_id BIGINT PRIMARY KEY,
    version    BIGINT NOT NULL
);

-- Ingestion reads an account's filters by it.
CREATE INDEX webhook_delivery_settings_filter_idx
    ON webhook_delivery_settings (account_id) WHERE filter IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION webhook_filter_version_bump(account BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO webhook_filter_versions AS v (account_id, version) VALUES (account, 1)
    ON CONFLICT (account_id) DO UPDATE SET version = v.version + 1;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION webhook_delivery_settings_routing() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_filter TEXT;
    new_filter TEXT;
    was_state  BOOLEAN := false;
    is_state   BOOLEAN := false;
    sub        TEXT;
    account    BIGINT;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        old_filter := OLD.filter;
        was_state := OLD.notify_on = 'state_change' OR OLD.format = 'pagerduty';
        sub := OLD.subscription_id;
        account := OLD.account_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        new_filter := NEW.filter;
        is_state := NEW.notify_on = 'state_change' OR NEW.format = 'pagerduty';
        sub := NEW.subscription_id;
        account := NEW.account_id;
    END IF;
    IF was_state IS DISTINCT FROM is_state THEN
        UPDATE webhook_subscriptions SET notify_state_change = is_state WHERE id = sub;
        -- A webhook that stops following states forgets them: followed
        -- again later, its jobs start as not failing.
        IF NOT is_state THEN
            DELETE FROM webhook_job_states WHERE subscription_id = sub;
        END IF;
    END IF;
    IF old_filter IS DISTINCT FROM new_filter THEN
        PERFORM webhook_filter_version_bump(account);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_delivery_settings_routing
    AFTER INSERT OR DELETE OR UPDATE OF filter, format, notify_on ON webhook_delivery_settings
    FOR EACH ROW EXECUTE FUNCTION webhook_delivery_settings_routing();

-- +goose StatementBegin
CREATE FUNCTION webhook_subscriptions_filter_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM webhook_delivery_settings d WHERE d.subscription_id = NEW.id AND d.filter IS NOT NULL) THEN
        PERFORM webhook_filter_version_bump(NEW.account_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_subscriptions_filter_version
    AFTER UPDATE OF event_types, job_ids, name, deleted_at ON webhook_subscriptions
    FOR EACH ROW
    WHEN (OLD.event_types IS DISTINCT FROM NEW.event_types OR OLD.job_ids IS DISTINCT FROM NEW.job_ids
          OR OLD.name IS DISTINCT FROM NEW.name OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION webhook_subscriptions_filter_version();

UPDATE webhook_subscriptions s SET notify_state_change = true
FROM webhook_delivery_settings d
WHERE d.subscription_id = s.id AND (d.notify_on = 'state_change' OR d.format = 'pagerduty');

INSERT INTO webhook_filter_versions (account_id, version)
SELECT DISTINCT account_id, 1 FROM webhook_delivery_settings WHERE filter IS NOT NULL;

-- +goose Down
DROP TRIGGER webhook_subscriptions_filter_version ON webhook_subscriptions;
DROP FUNCTION webhook_subscriptions_filter_version();
DROP TRIGGER webhook_delivery_settings_routing ON webhook_delivery_settings;
DROP FUNCTION webhook_delivery_settings_routing();
DROP FUNCTION webhook_filter_version_bump(BIGINT);
DROP INDEX webhook_delivery_settings_filter_idx;
DROP TABLE webhook_filter_versions;
ALTER TABLE webhook_subscriptions DROP COLUMN notify_state_change;
DROP TABLE webhook_job_states;
