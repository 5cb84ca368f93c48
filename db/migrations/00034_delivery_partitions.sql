-- +goose Up
-- Delivery records and their attempts are kept in time partitions, and
-- retention drops a whole partition once everything in it is older than
-- the retention period and final (webhook_delivery_partitions_past), rather
-- than deleting rows: its cost no longer depends on how many rows the table
-- holds, and it leaves no dead rows behind for vacuum.
--
-- The partition key is the delivery id itself: an id carries the second it
-- was made, as eight hex digits after its prefix (webhook_delivery_id), so
-- every lookup by id (the record's, the API's) reads one partition, and the
-- primary key stays the id alone. An attempt's partition is its delivery's
-- (the same bounds on delivery_id), so the two go together. The foreign key
-- from attempts to deliveries is gone: a partition of deliveries referenced
-- by one could not be dropped without a check that reads every row of it.
-- What it cascaded (an account's or webhook's deliveries deleted outright)
-- leaves their attempts unreachable (they are only read by delivery id)
-- until their partition goes.
--
-- docs/delivery.md "Retention" says how wide partitions are, how far ahead
-- they are made and what keeps one that still holds a pending delivery.

-- +goose StatementBegin
-- The start of every delivery id made at `at`: its prefix and the second,
-- as eight lowercase hex digits (unsigned seconds since 1970: until 2106).
-- Ids made in a later second sort after it, byte for byte and in any
-- collation that orders digits before letters, so partition bounds are
-- these prefixes.
CREATE FUNCTION webhook_delivery_id_floor(at TIMESTAMPTZ) RETURNS TEXT
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT 'wdl_' || lpad(to_hex(floor(extract(epoch FROM at))::bigint), 8, '0')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A delivery id made at `at` for `key` (an event and a webhook, a replay
-- and an original): the second, then 18 hex digits of the key's SHA-256.
-- deliveries.DeliveryKey is the same 18 digits.
CREATE FUNCTION webhook_delivery_id(at TIMESTAMPTZ, key TEXT) RETURNS TEXT
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT webhook_delivery_id_floor(at) || substr(encode(sha256(convert_to(key, 'UTF8')), 'hex'), 1, 18)
$$;
-- +goose StatementEnd

-- The partitions, by the suffix both tables' partitions share.
CREATE TABLE webhook_delivery_partitions (
    name      TEXT        PRIMARY KEY,
    starts_at TIMESTAMPTZ NOT NULL UNIQUE,
    ends_at   TIMESTAMPTZ NOT NULL,
    CHECK (ends_at > starts_at)
);

ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_unpartitioned;
ALTER TABLE webhook_delivery_attempts RENAME TO webhook_delivery_attempts_unpartitioned;
ALTER INDEX webhook_deliveries_pkey RENAME TO webhook_deliveries_unpartitioned_pkey;
ALTER INDEX webhook_delivery_attempts_pkey RENAME TO webhook_delivery_attempts_unpartitioned_pkey;

CREATE TABLE webhook_deliveries (
    id                TEXT        NOT NULL,                      -- wdl_..., also sent as a header
    account_id        BIGINT      NOT NULL,
    subscription_id   TEXT        NOT NULL,
    event_id          TEXT        NOT NULL,
    event_type        TEXT        NOT NULL,
    job_id            TEXT        NOT NULL DEFAULT '',
    run_id            TEXT        NOT NULL DEFAULT '',
    is_test           BOOLEAN     NOT NULL DEFAULT false,
    redelivery_of     TEXT,
    status            TEXT        NOT NULL DEFAULT 'pending',
    attempt_count     INTEGER     NOT NULL DEFAULT 0,
    last_status_code  INTEGER     NOT NULL DEFAULT 0,
    last_error        TEXT        NOT NULL DEFAULT '',
    payload           BYTEA,
    workflow_id       TEXT        NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at      TIMESTAMPTZ,
    retry_delay_ms    BIGINT      NOT NULL DEFAULT 0,
    max_attempts      INTEGER     NOT NULL DEFAULT 6,
    next_attempt_at   TIMESTAMPTZ,
    workflow_run_id   TEXT        NOT NULL DEFAULT '',
    leased_until      TIMESTAMPTZ,
    lane_key          SMALLINT    GENERATED ALWAYS AS (webhook_lane_key(subscription_id)) STORED,
    route             TEXT        NOT NULL DEFAULT 'shared',
    order_released_at TIMESTAMPTZ,
    sequence          BIGINT,
    lost_claims       SMALLINT    NOT NULL DEFAULT 0,
    claim_reused      BOOLEAN     NOT NULL DEFAULT false,
    body_name         TEXT,
    CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id),
    CONSTRAINT webhook_deliveries_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    CONSTRAINT webhook_deliveries_subscription_id_fkey FOREIGN KEY (subscription_id)
        REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    CONSTRAINT webhook_deliveries_status_check
        CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped')),
    CONSTRAINT webhook_deliveries_route_check CHECK (route IN ('shared', 'own', 'paused', 'held'))
) PARTITION BY RANGE (id);

CREATE TABLE webhook_delivery_attempts (
    delivery_id      TEXT        NOT NULL,
    attempt_number   INTEGER     NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL,
    duration_ms      INTEGER     NOT NULL,
    status_code      INTEGER     NOT NULL DEFAULT 0,
    error_kind       TEXT        NOT NULL DEFAULT '',
    error_message    TEXT        NOT NULL DEFAULT '',
    response_snippet TEXT        NOT NULL DEFAULT '',
    late_status_code INTEGER,
    late_after_ms    INTEGER,
    CONSTRAINT webhook_delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt_number)
) PARTITION BY RANGE (delivery_id);

-- +goose StatementBegin
-- Makes partitions of both tables, each `width` wide, from where the last
-- one ends (or from the current width-aligned period, when that is later:
-- no id is ever made in the past) until one holds `until`. Returns how many
-- it made. Takes the partitions' advisory lock, so concurrent callers (every
-- API and worker process) make each once. A new partition is empty, so
-- creating it locks the parent only for a moment; lock_timeout bounds the
-- wait behind a long statement, and the caller tries again later.
CREATE FUNCTION webhook_delivery_partitions_ensure(width INTERVAL, until TIMESTAMPTZ) RETURNS INTEGER
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
        EXECUTE format('CREATE TABLE %I PARTITION OF webhook_deliveries FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 85)',
            'webhook_deliveries_' || n, webhook_delivery_id_floor(s), webhook_delivery_id_floor(e));
        EXECUTE format('CREATE TABLE %I PARTITION OF webhook_delivery_attempts FOR VALUES FROM (%L) TO (%L)',
            'webhook_delivery_attempts_' || n, webhook_delivery_id_floor(s), webhook_delivery_id_floor(e));
        INSERT INTO webhook_delivery_partitions (name, starts_at, ends_at) VALUES (n, s, e);
        s := e;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The partitions (by the suffix both tables' partitions share), oldest
-- first, that end at or before `before` and hold no delivery that is not
-- final: a pending, retrying, paused or held delivery keeps its whole
-- partition until it ends (a final delivery never becomes pending again; a
-- new attempt of it is a new delivery, with a new id, made now). Retention
-- detaches each concurrently, then drops it (deliveries.Store.DropPartitions):
-- a plain DROP holds the parent's ACCESS EXCLUSIVE lock, and every
-- ingestion, claim and record would queue behind it while it waits for the
-- statements before it. DETACH ... CONCURRENTLY cannot run inside a function
-- or a transaction, so those steps are statements of their own.
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

-- +goose StatementBegin
-- The records made before partitions: one partition from the first
-- possible id to now's second, their ids made anew with the second they
-- were created in (nothing has shipped: these are development databases).
DO $$
DECLARE
    upto TIMESTAMPTZ := date_trunc('second', now()) + interval '1 second';
BEGIN
    INSERT INTO webhook_delivery_partitions (name, starts_at, ends_at) VALUES ('before', to_timestamp(0), upto);
    EXECUTE format('CREATE TABLE webhook_deliveries_before PARTITION OF webhook_deliveries FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 85)',
        webhook_delivery_id_floor(to_timestamp(0)), webhook_delivery_id_floor(upto));
    EXECUTE format('CREATE TABLE webhook_delivery_attempts_before PARTITION OF webhook_delivery_attempts FOR VALUES FROM (%L) TO (%L)',
        webhook_delivery_id_floor(to_timestamp(0)), webhook_delivery_id_floor(upto));
    EXECUTE $copy$
        WITH ids AS (
            SELECT id AS old_id, webhook_delivery_id_floor(least(created_at, now())) || substr(id, 5, 18) AS new_id
            FROM webhook_deliveries_unpartitioned
        ), deliveries AS (
            INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
                is_test, redelivery_of, status, attempt_count, last_status_code, last_error, payload, workflow_id,
                created_at, updated_at, completed_at, retry_delay_ms, max_attempts, next_attempt_at, workflow_run_id,
                leased_until, route, order_released_at, sequence, lost_claims, claim_reused, body_name)
            SELECT m.new_id, d.account_id, d.subscription_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test,
                COALESCE(r.new_id, d.redelivery_of), d.status, d.attempt_count, d.last_status_code, d.last_error,
                d.payload, d.workflow_id, d.created_at, d.updated_at, d.completed_at, d.retry_delay_ms,
                d.max_attempts, d.next_attempt_at, d.workflow_run_id, d.leased_until, d.route, d.order_released_at,
                d.sequence, d.lost_claims, d.claim_reused, d.body_name
            FROM webhook_deliveries_unpartitioned d
            JOIN ids m ON m.old_id = d.id
            LEFT JOIN ids r ON r.old_id = d.redelivery_of
        )
        INSERT INTO webhook_delivery_attempts
        SELECT m.new_id, a.attempt_number, a.started_at, a.duration_ms, a.status_code, a.error_kind,
            a.error_message, a.response_snippet, a.late_status_code, a.late_after_ms
        FROM webhook_delivery_attempts_unpartitioned a
        JOIN ids m ON m.old_id = a.delivery_id
    $copy$;
END
$$;
-- +goose StatementEnd

DROP TABLE webhook_delivery_attempts_unpartitioned;
DROP TABLE webhook_deliveries_unpartitioned;

-- The indexes as before, each now one per partition; without the one on
-- created_at, which only the row-by-row purge read. The sequence's index
-- is no longer unique: a unique index of a partitioned table must hold the
-- partition key. The webhook's counter (webhook_delivery_sequences, taken
-- under its row lock in the statement that stores the deliveries) is what
-- gives each number once.
CREATE INDEX webhook_deliveries_account_event_idx ON webhook_deliveries (account_id, event_id);
CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_account_job_idx ON webhook_deliveries (account_id, job_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_account_run_idx ON webhook_deliveries (account_id, run_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (subscription_id, next_attempt_at, id)
    WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_held_idx ON webhook_deliveries (subscription_id)
    WHERE route = 'held' AND next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_run_pending_idx ON webhook_deliveries (subscription_id, run_id)
    WHERE next_attempt_at IS NOT NULL AND run_id <> '';
CREATE INDEX webhook_deliveries_sequence_idx ON webhook_deliveries (subscription_id, sequence)
    WHERE sequence IS NOT NULL AND redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_shared_due_idx ON webhook_deliveries (lane_key, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL AND route = 'shared';
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, created_at DESC, id DESC);

-- One partition for the next minute: the API makes the next ones ahead as
-- soon as it starts (deliveries.Store.KeepPartitions), as wide as its
-- DELIVERY_RETENTION asks, and the worker's retention runs do too. (A
-- wider first partition would keep the first records longer than a short
-- retention asks.)
SELECT webhook_delivery_partitions_ensure(interval '1 minute', now() + interval '1 second');

-- +goose Down
-- +goose StatementBegin
DO $$ BEGIN
    RAISE EXCEPTION 'migration 00034 is not undone: restore a backup taken before it';
END $$;
-- +goose StatementEnd
