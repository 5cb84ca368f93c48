-- +goose Up
-- An event's run data is kept in the service's own compact form (package
-- eventdata: a version byte, then each member as a protocol buffers field,
-- no member names), not as JSON: only the service reads it, and no
-- statement looks inside it. Nothing has shipped yet, so no stored value
-- needs rewriting.
COMMENT ON COLUMN webhook_events.data IS
    'run data as package eventdata keeps it: a version byte, then protocol buffers fields';

-- +goose Down
COMMENT ON COLUMN webhook_events.data IS NULL;
