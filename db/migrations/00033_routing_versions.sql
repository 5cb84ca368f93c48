-- +goose Up
-- The filter version becomes the account's routing version: it also moves
-- when a webhook starts or stops following states (notify_state_change),
-- and when one that follows them is deleted. A process that read an
-- account's routing at a version therefore knows, while that version
-- stands, whether the account has filters or state-change webhooks, and
-- stores a group none of whose accounts has either with the ingestion
-- statement that leaves routing out (IngestEventsWithoutRouting; the full
-- statement's routing steps cost every group 0.15-0.2 ms to plan and run,
-- docs/performance.md).
ALTER TABLE webhook_filter_versions RENAME TO webhook_routing_versions;
ALTER TABLE webhook_routing_versions RENAME CONSTRAINT webhook_filter_versions_pkey TO webhook_routing_versions_pkey;

-- +goose StatementBegin
CREATE FUNCTION webhook_routing_version_bump(account BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO webhook_routing_versions AS v (account_id, version) VALUES (account, 1)
    ON CONFLICT (account_id) DO UPDATE SET version = v.version + 1;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_settings_routing() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF old_filter IS DISTINCT FROM new_filter OR was_state IS DISTINCT FROM is_state THEN
        PERFORM webhook_routing_version_bump(account);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_subscriptions_filter_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.notify_state_change
       OR EXISTS (SELECT 1 FROM webhook_delivery_settings d WHERE d.subscription_id = NEW.id AND d.filter IS NOT NULL) THEN
        PERFORM webhook_routing_version_bump(NEW.account_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

ALTER FUNCTION webhook_subscriptions_filter_version() RENAME TO webhook_subscriptions_routing_version;
ALTER TRIGGER webhook_subscriptions_filter_version ON webhook_subscriptions RENAME TO webhook_subscriptions_routing_version;
DROP FUNCTION webhook_filter_version_bump(BIGINT);

-- Accounts that follow states already: a version a process can hold.
SELECT webhook_routing_version_bump(a.account_id)
FROM (SELECT DISTINCT account_id FROM webhook_subscriptions WHERE notify_state_change AND deleted_at IS NULL) a;

-- +goose Down
ALTER TABLE webhook_routing_versions RENAME CONSTRAINT webhook_routing_versions_pkey TO webhook_filter_versions_pkey;
ALTER TABLE webhook_routing_versions RENAME TO webhook_filter_versions;

-- +goose StatementBegin
CREATE FUNCTION webhook_filter_version_bump(account BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO webhook_filter_versions AS v (account_id, version) VALUES (account, 1)
    ON CONFLICT (account_id) DO UPDATE SET version = v.version + 1;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_settings_routing() RETURNS trigger LANGUAGE plpgsql AS $$
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

ALTER TRIGGER webhook_subscriptions_routing_version ON webhook_subscriptions RENAME TO webhook_subscriptions_filter_version;
ALTER FUNCTION webhook_subscriptions_routing_version() RENAME TO webhook_subscriptions_filter_version;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_subscriptions_filter_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM webhook_delivery_settings d WHERE d.subscription_id = NEW.id AND d.filter IS NOT NULL) THEN
        PERFORM webhook_filter_version_bump(NEW.account_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP FUNCTION webhook_routing_version_bump(BIGINT);
