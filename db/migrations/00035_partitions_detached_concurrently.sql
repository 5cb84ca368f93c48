-- +goose Up
-- Retention detaches a partition of delivery records concurrently before
-- dropping it (deliveries.Store.DropPartitions): a plain DROP of a partition
-- holds the parent's ACCESS EXCLUSIVE lock, and every ingestion, claim and
-- record queues behind it while it waits for the statements before it.
-- DETACH ... CONCURRENTLY cannot run inside a function or a transaction, so
-- the drop function gives way to one that names the partitions to go, and
-- the steps are statements of their own.
DROP FUNCTION webhook_delivery_partitions_drop(TIMESTAMPTZ);

-- +goose StatementBegin
-- The partitions (by the suffix both tables' partitions share), oldest
-- first, that end at or before `before` and hold no delivery that is not
-- final: a pending, retrying, paused or held delivery keeps its whole
-- partition until it ends (a final delivery never becomes pending again; a
-- new attempt of it is a new delivery, with a new id, made now).
CREATE FUNCTION webhook_delivery_partitions_past(before TIMESTAMPTZ) RETURNS SETOF TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    p       RECORD;
    pending BOOLEAN;
BEGIN
    FOR p IN SELECT name FROM webhook_delivery_partitions WHERE ends_at <= before ORDER BY starts_at LOOP
        IF to_regclass('webhook_deliveries_' || p.name) IS NOT NULL THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE next_attempt_at IS NOT NULL)', 'webhook_deliveries_' || p.name)
                INTO pending;
            CONTINUE WHEN pending;
        END IF;
        RETURN NEXT p.name;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION webhook_delivery_partitions_past(TIMESTAMPTZ);
-- +goose StatementBegin
CREATE FUNCTION webhook_delivery_partitions_drop(before TIMESTAMPTZ) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    p       RECORD;
    pending BOOLEAN;
    dropped INTEGER := 0;
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM pg_advisory_xact_lock(hashtext('webhook_delivery_partitions'));
    FOR p IN SELECT name FROM webhook_delivery_partitions WHERE ends_at <= before ORDER BY starts_at LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE next_attempt_at IS NOT NULL)', 'webhook_deliveries_' || p.name)
            INTO pending;
        CONTINUE WHEN pending;
        EXECUTE format('DROP TABLE %I', 'webhook_delivery_attempts_' || p.name);
        EXECUTE format('DROP TABLE %I', 'webhook_deliveries_' || p.name);
        DELETE FROM webhook_delivery_partitions WHERE name = p.name;
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END
$$;
-- +goose StatementEnd
