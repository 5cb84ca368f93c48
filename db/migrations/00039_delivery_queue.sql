-- +goose Up
-- The due indexes move from the delivery records to a queue of the
-- deliveries not final. A record's update moved next_attempt_at, which the
-- four partial due indexes named, so it was never HOT: every record wrote
-- a second version of the row and of each of its indexes' entries, and in
-- time partitions (migration 00034), which take no new rows once past,
-- that space stays until the partition is dropped. The queue is small (the
-- deliveries not final), so its churn is reused space; the records' own
-- indexes then see no column of theirs change when an attempt is recorded
-- (next_attempt_at stays on the record, read by the API, but no index
-- names it).
--
-- The queue mirrors the due state of every delivery not final, kept by
-- the triggers below: the statements that claim, record, hold, move and
-- end deliveries keep writing the records alone, and read what is due
-- from the queue. A delivery is in the queue exactly while its
-- next_attempt_at is set.
CREATE TABLE webhook_delivery_queue (
    id              TEXT        PRIMARY KEY,
    subscription_id TEXT        NOT NULL,
    account_id      BIGINT      NOT NULL,
    lane_key        SMALLINT    NOT NULL,
    route           TEXT        NOT NULL,
    run_id          TEXT        NOT NULL,
    event_type      TEXT        NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    leased_until    TIMESTAMPTZ,
    workflow_id     TEXT        NOT NULL
) WITH (fillfactor = 50);
-- Half of each page is left for the new versions of its rows: a claim
-- changes a page's rows together (the lease and workflow, which no index
-- names), and each new version that finds room on its page is a HOT
-- update, without an entry in the queue's five indexes.
COMMENT ON TABLE webhook_delivery_queue IS
    'the due state of each delivery not final, kept from webhook_deliveries by triggers (migration 00039)';

CREATE INDEX webhook_delivery_queue_due_idx ON webhook_delivery_queue (subscription_id, next_attempt_at, id);
CREATE INDEX webhook_delivery_queue_shared_due_idx ON webhook_delivery_queue (lane_key, next_attempt_at)
    WHERE route = 'shared';
CREATE INDEX webhook_delivery_queue_held_idx ON webhook_delivery_queue (subscription_id)
    WHERE route = 'held';
CREATE INDEX webhook_delivery_queue_run_idx ON webhook_delivery_queue (subscription_id, run_id)
    WHERE run_id <> '';

INSERT INTO webhook_delivery_queue (id, subscription_id, account_id, lane_key, route, run_id, event_type,
    created_at, next_attempt_at, leased_until, workflow_id)
SELECT d.id, d.subscription_id, d.account_id, d.lane_key, d.route, d.run_id, d.event_type,
    d.created_at, d.next_attempt_at, d.leased_until, d.workflow_id
FROM webhook_deliveries d
WHERE d.next_attempt_at IS NOT NULL;

-- +goose StatementBegin
-- New records due: one statement for the inserting statement's rows.
CREATE FUNCTION webhook_delivery_queue_inserted() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_delivery_queue (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, n.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM inserted n
    WHERE n.next_attempt_at IS NOT NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Updated records: those now final leave the queue; the others' due state
-- follows (only rows whose due state changed are written: a claim changes
-- the lease, a record the due time, a route change the route).
CREATE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_delivery_queue q
    USING updated n
    WHERE q.id = n.id AND n.next_attempt_at IS NULL;
    INSERT INTO webhook_delivery_queue AS q (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, n.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM updated n
    WHERE n.next_attempt_at IS NOT NULL
    ON CONFLICT (id) DO UPDATE
    SET route = EXCLUDED.route, next_attempt_at = EXCLUDED.next_attempt_at, leased_until = EXCLUDED.leased_until,
        workflow_id = EXCLUDED.workflow_id
    WHERE (q.route, q.next_attempt_at, q.leased_until, q.workflow_id)
          IS DISTINCT FROM (EXCLUDED.route, EXCLUDED.next_attempt_at, EXCLUDED.leased_until, EXCLUDED.workflow_id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Deleted records (an account's deletion cascades to them) leave the
-- queue. Retention drops whole partitions, none holding a row of the
-- queue (webhook_delivery_partitions_past).
CREATE FUNCTION webhook_delivery_queue_deleted() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_delivery_queue q USING deleted o WHERE q.id = o.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Statement triggers with transition tables: one call a statement, however
-- many rows it writes (a group commit's, a claim's page, a record's group).
CREATE TRIGGER webhook_delivery_queue_inserted AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION webhook_delivery_queue_inserted();
CREATE TRIGGER webhook_delivery_queue_updated AFTER UPDATE ON webhook_deliveries
    REFERENCING NEW TABLE AS updated FOR EACH STATEMENT EXECUTE FUNCTION webhook_delivery_queue_updated();
CREATE TRIGGER webhook_delivery_queue_deleted AFTER DELETE ON webhook_deliveries
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION webhook_delivery_queue_deleted();

DROP INDEX webhook_deliveries_due_idx;
DROP INDEX webhook_deliveries_held_idx;
DROP INDEX webhook_deliveries_run_pending_idx;
DROP INDEX webhook_deliveries_shared_due_idx;

-- +goose StatementBegin
-- As in migration 00036, with a partition's deliveries not final found in
-- the queue, by the partition's id range.
CREATE OR REPLACE FUNCTION webhook_delivery_partitions_past(before TIMESTAMPTZ) RETURNS SETOF TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    p    RECORD;
    kept BOOLEAN;
BEGIN
    FOR p IN SELECT name, starts_at, ends_at FROM webhook_delivery_partitions WHERE ends_at <= before ORDER BY starts_at LOOP
        IF to_regclass('webhook_deliveries_' || p.name) IS NOT NULL THEN
            SELECT EXISTS (SELECT 1 FROM webhook_delivery_queue q
                           WHERE q.id >= webhook_delivery_id_floor(p.starts_at) AND q.id < webhook_delivery_id_floor(p.ends_at))
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

-- +goose Down
-- +goose StatementBegin
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
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (subscription_id, next_attempt_at, id)
    WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_held_idx ON webhook_deliveries (subscription_id)
    WHERE route = 'held' AND next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_run_pending_idx ON webhook_deliveries (subscription_id, run_id)
    WHERE next_attempt_at IS NOT NULL AND run_id <> '';
CREATE INDEX webhook_deliveries_shared_due_idx ON webhook_deliveries (lane_key, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL AND route = 'shared';
DROP TRIGGER webhook_delivery_queue_deleted ON webhook_deliveries;
DROP TRIGGER webhook_delivery_queue_updated ON webhook_deliveries;
DROP TRIGGER webhook_delivery_queue_inserted ON webhook_deliveries;
DROP FUNCTION webhook_delivery_queue_deleted();
DROP FUNCTION webhook_delivery_queue_updated();
DROP FUNCTION webhook_delivery_queue_inserted();
DROP TABLE webhook_delivery_queue;
