-- +goose Up
-- Two values every delivery or event carries are kept as the bytes they
-- stand for, not as their text (issue 37: bytes a delivery):
--  * the claiming workflow's run id, a UUID: 16 bytes rather than 37 (NULL:
--    no claim yet, read as ""; webhook_uuid_or_null keeps a value that is
--    not a UUID as NULL rather than failing the claim beside it);
--  * the ingestion's W3C traceparent, version 00: its 26 bytes (version,
--    trace id, parent id, flags) rather than 55 characters (empty: untraced;
--    package deliveries packs and unpacks it).
-- Nothing has shipped yet; values stored by earlier versions are converted.
-- +goose StatementBegin
CREATE FUNCTION webhook_uuid_or_null(t text) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN t ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
        THEN t::uuid END
$$;
-- +goose StatementEnd

ALTER TABLE webhook_deliveries ALTER COLUMN workflow_run_id DROP DEFAULT,
    ALTER COLUMN workflow_run_id DROP NOT NULL,
    ALTER COLUMN workflow_run_id TYPE uuid USING webhook_uuid_or_null(workflow_run_id);

ALTER TABLE webhook_events ALTER COLUMN trace_parent DROP DEFAULT,
    ALTER COLUMN trace_parent TYPE bytea USING (
        CASE WHEN trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
            THEN decode(replace(trace_parent, '-', ''), 'hex') ELSE ''::bytea END),
    ALTER COLUMN trace_parent SET DEFAULT ''::bytea;
COMMENT ON COLUMN webhook_events.trace_parent IS
    'W3C traceparent (version 00) of the ingestion as its 26 bytes; empty: untraced';

-- +goose Down
COMMENT ON COLUMN webhook_events.trace_parent IS NULL;
ALTER TABLE webhook_events ALTER COLUMN trace_parent DROP DEFAULT,
    ALTER COLUMN trace_parent TYPE text USING (
        CASE WHEN length(trace_parent) = 26 THEN
            substr(encode(trace_parent, 'hex'), 1, 2) || '-' || substr(encode(trace_parent, 'hex'), 3, 32) || '-' ||
            substr(encode(trace_parent, 'hex'), 35, 16) || '-' || substr(encode(trace_parent, 'hex'), 51, 2)
        ELSE '' END),
    ALTER COLUMN trace_parent SET DEFAULT '';

ALTER TABLE webhook_deliveries ALTER COLUMN workflow_run_id TYPE text USING COALESCE(workflow_run_id::text, ''),
    ALTER COLUMN workflow_run_id SET DEFAULT '',
    ALTER COLUMN workflow_run_id SET NOT NULL;
DROP FUNCTION webhook_uuid_or_null(text);
