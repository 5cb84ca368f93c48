-- +goose Up
-- Retention reads deliveries by age only, and rows arrive in age order: a
-- block-range index serves it at a few pages for the whole table, and a
-- row written costs it no entry (the B-tree cost one per insert and per
-- update that is not HOT: docs/performance.md, "What a delivery writes").
DROP INDEX webhook_deliveries_created_idx;
CREATE INDEX webhook_deliveries_created_brin ON webhook_deliveries USING brin (created_at);

-- +goose Down
DROP INDEX webhook_deliveries_created_brin;
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at);
