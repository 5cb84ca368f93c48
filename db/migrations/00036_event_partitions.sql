-- +goose Up
-- Events are kept in the same time partitions as delivery records, by the
-- time they were accepted, and retention drops them with their deliveries
-- rather than deleting them row by row: no partition's drop leaves a burst
-- of event deletes behind it, and nothing of retention's cost grows with
-- the table.
--
-- An event's partition is its deliveries' partition: a delivery made at
-- ingestion carries the second of the same statement's now(), which is the
-- event's accepted_at, and both tables' bounds are the same seconds. A
-- redelivery or replay, made later in a later partition, still reads its
-- event (a body kept by name is built from it), so it keeps its event's
-- partition until it goes itself (webhook_delivery_partitions_past, through
-- the small index of redeliveries by event).
--
-- An event's id (derived from the caller's eventId) carries no time, so the
-- parent cannot hold a unique index of it: each partition has its own
-- primary key, ingestion looks for the id in every partition before it
-- stores an event, and an ingestion statement near a partition's start
-- also claims each id in webhook_event_boundary_ids, so an id is stored
-- once however often and concurrently it comes. The foreign key to
-- accounts goes, for the reasons of migration 00035.

ALTER TABLE webhook_events RENAME TO webhook_events_unpartitioned;
ALTER INDEX webhook_events_pkey RENAME TO webhook_events_unpartitioned_pkey;
ALTER INDEX webhook_events_accepted_idx RENAME TO webhook_events_unpartitioned_accepted_idx;

CREATE TABLE webhook_events (
    id           TEXT        NOT NULL,                  -- wev_...
    account_id   BIGINT      NOT NULL,
    event_type   TEXT        NOT NULL,
    job_id       TEXT        NOT NULL,
    run_id       TEXT        NOT NULL,
    data         BYTEA       NOT NULL,                  -- the payload's "data" object, as JSON
    tool_name    TEXT        NOT NULL,                  -- the "<tool>Version" prefix at ingestion
    accepted_at  TIMESTAMPTZ NOT NULL DEFAULT now(),    -- also the payload's timestamp; the partition key
    trace_parent TEXT        NOT NULL DEFAULT ''        -- W3C traceparent of the ingestion, for the attempts' spans
) PARTITION BY RANGE (accepted_at);
-- The web UI's filter check reads an account's latest events.
CREATE INDEX webhook_events_accepted_idx ON webhook_events (accepted_at);

-- The ids of events stored near a partition's start (within 30 s of it),
-- claimed by the ingestion statement beside the event: two statements
-- storing the same id on either side of the start would each miss the
-- other's uncommitted row in the other partition, so they meet at this
-- table's primary key, and the later one stores nothing. Any two that
-- overlap start within 20 s of each other (each statement is bounded to
-- 10 s: UseIngestionPlans), so both are in the window; retention forgets
-- rows older than a minute. Unlogged: a claim matters only to statements
-- running beside the one that made it, and none outlives a crash or a
-- failover (which empty an unlogged table), so it writes no WAL.
CREATE UNLOGGED TABLE webhook_event_boundary_ids (
    id         TEXT        PRIMARY KEY,
    claimed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Redeliveries and replays by event: few rows, read by retention alone.
CREATE INDEX webhook_deliveries_redelivered_event_idx ON webhook_deliveries (event_id)
    WHERE redelivery_of IS NOT NULL;

-- +goose StatementBegin
-- Makes and attaches the events partition `n`, from s to e, with its own
-- primary key (the parent has none).
CREATE FUNCTION webhook_events_partition_attach(n TEXT, s TIMESTAMPTZ, e TIMESTAMPTZ) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE webhook_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', 'webhook_events_' || n);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id)', 'webhook_events_' || n, 'webhook_events_' || n || '_pkey');
    EXECUTE format('ALTER TABLE webhook_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', 'webhook_events_' || n, s, e);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Makes and attaches the partition `n` of deliveries, attempts and events,
-- from s to e.
CREATE FUNCTION webhook_partition_attach(n TEXT, s TIMESTAMPTZ, e TIMESTAMPTZ) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['webhook_deliveries', 'webhook_delivery_attempts'] LOOP
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)%s',
            t || '_' || n, t, CASE t WHEN 'webhook_deliveries' THEN ' WITH (fillfactor = 85)' ELSE '' END);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
            t, t || '_' || n, webhook_delivery_id_floor(s), webhook_delivery_id_floor(e));
    END LOOP;
    PERFORM webhook_events_partition_attach(n, s, e);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Makes partitions of the three tables, each `width` wide, from where the
-- last one ends (or from the current width-aligned period, when that is
-- later: no id is ever made in the past) until one holds `until`, and
-- returns how many it made. As in migration 00035: one maker at a time (an
-- advisory lock), each partition made as a table of its own and attached,
-- lock_timeout bounding a wait behind another DDL statement. An event
-- partition's primary key is its own (the parent has none).
CREATE OR REPLACE FUNCTION webhook_delivery_partitions_ensure(width INTERVAL, until TIMESTAMPTZ) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    secs  BIGINT := floor(extract(epoch FROM width));
    s     TIMESTAMPTZ;
    e     TIMESTAMPTZ;
    n     TEXT;
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
        PERFORM webhook_partition_attach(n, s, e);
        INSERT INTO webhook_delivery_partitions (name, starts_at, ends_at) VALUES (n, s, e);
        s := e;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The partitions (by the suffix the three tables' partitions share), oldest
-- first, that end at or before `before`, hold no delivery that is not final
-- (migration 00034), and hold no event of a redelivery or replay in a later
-- partition: such a delivery builds its body from its event for as long as
-- it is kept.
CREATE OR REPLACE FUNCTION webhook_delivery_partitions_past(before TIMESTAMPTZ) RETURNS SETOF TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    p    RECORD;
    kept BOOLEAN;
BEGIN
    FOR p IN SELECT name, ends_at FROM webhook_delivery_partitions WHERE ends_at <= before ORDER BY starts_at LOOP
        IF to_regclass('webhook_deliveries_' || p.name) IS NOT NULL THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE next_attempt_at IS NOT NULL)', 'webhook_deliveries_' || p.name)
                INTO kept;
            CONTINUE WHEN kept;
        END IF;
        IF to_regclass('webhook_events_' || p.name) IS NOT NULL THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM webhook_deliveries d JOIN %I e ON e.id = d.event_id
                                WHERE d.redelivery_of IS NOT NULL AND d.id >= %L)',
                    'webhook_events_' || p.name, webhook_delivery_id_floor(p.ends_at))
                INTO kept;
            CONTINUE WHEN kept;
        END IF;
        RETURN NEXT p.name;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- An event partition for every partition of delivery records, and the
-- events moved into them. An event that fits none (older than every kept
-- partition, or accepted in a gap while nothing made partitions: nothing
-- has shipped, these are development databases) has no delivery whose
-- body needs it and goes.
DO $$
DECLARE
    p RECORD;
BEGIN
    FOR p IN SELECT name, starts_at, ends_at FROM webhook_delivery_partitions ORDER BY starts_at LOOP
        PERFORM webhook_events_partition_attach(p.name, p.starts_at, p.ends_at);
    END LOOP;
    INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, accepted_at, trace_parent)
    SELECT e.id, e.account_id, e.event_type, e.job_id, e.run_id, e.data, e.tool_name, e.accepted_at, e.trace_parent
    FROM webhook_events_unpartitioned e
    WHERE EXISTS (SELECT 1 FROM webhook_delivery_partitions w WHERE e.accepted_at >= w.starts_at AND e.accepted_at < w.ends_at);
END
$$;
-- +goose StatementEnd

DROP TABLE webhook_events_unpartitioned;

-- +goose Down
-- +goose StatementBegin
DO $$ BEGIN
    RAISE EXCEPTION 'migration 00036 is not undone: restore a backup taken before it';
END $$;
-- +goose StatementEnd
