-- +goose Up
-- Making and dropping a partition of delivery records no longer waits on,
-- or stops, the statements that ingest, claim and record deliveries.
--
-- The deliveries' foreign keys to accounts and webhook_subscriptions go.
-- Every partition carried a copy of each: making one took SHARE ROW
-- EXCLUSIVE on both referenced tables (so every write of a webhook's row
-- waited for it), and dropping one took ACCESS EXCLUSIVE on both (so every
-- statement that reads a webhook waited, behind whatever ran before it). A
-- delivery row is only ever written for a webhook the same statement read,
-- webhooks and accounts are never deleted by the service (a webhook's
-- DELETE sets deleted_at), and their records go with their partitions.
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_account_id_fkey,
    DROP CONSTRAINT webhook_deliveries_subscription_id_fkey;

-- +goose StatementBegin
-- Makes partitions of both tables, each `width` wide, from where the last
-- one ends (or from the current width-aligned period, when that is later:
-- no id is ever made in the past) until one holds `until`. Returns how many
-- it made. Takes the partitions' advisory lock, so concurrent callers (every
-- API process and retention run) make each once. Each is made as a table of
-- its own, then attached: ATTACH takes SHARE UPDATE EXCLUSIVE on the parent,
-- which no read or write of it waits for, where CREATE ... PARTITION OF
-- takes ACCESS EXCLUSIVE. The new table is empty, so attaching it builds its
-- indexes and checks its bounds at once; lock_timeout bounds the wait behind
-- another DDL statement, and the caller tries again later.
CREATE OR REPLACE FUNCTION webhook_delivery_partitions_ensure(width INTERVAL, until TIMESTAMPTZ) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    secs  BIGINT := floor(extract(epoch FROM width));
    s     TIMESTAMPTZ;
    e     TIMESTAMPTZ;
    n     TEXT;
    t     TEXT;
    made  INTEGER := 0;
BEGIN
    IF secs < 1 THEN
        RAISE EXCEPTION 'partition width % is below a second', width;
    END IF;
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM pg_advisory_xact_lock(hashtext('webhook_delivery_partitions'));
    SELECT max(ends_at) INTO s FROM webhook_delivery_partitions;
    s := greatest(s, to_timestamp(floor(extract(epoch FROM now()) / secs) * secs));
    WHILE s <= until LOOP
        e := s + make_interval(secs => secs);
        n := to_char(s AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
        FOREACH t IN ARRAY ARRAY['webhook_deliveries', 'webhook_delivery_attempts'] LOOP
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)%s',
                t || '_' || n, t, CASE t WHEN 'webhook_deliveries' THEN ' WITH (fillfactor = 85)' ELSE '' END);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                t, t || '_' || n, webhook_delivery_id_floor(s), webhook_delivery_id_floor(e));
        END LOOP;
        INSERT INTO webhook_delivery_partitions (name, starts_at, ends_at) VALUES (n, s, e);
        s := e;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$ BEGIN
    RAISE EXCEPTION 'migration 00035 is not undone: restore a backup taken before it';
END $$;
-- +goose StatementEnd
