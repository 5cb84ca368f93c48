-- +goose Up
-- The delay the last failed attempt asked for (its Retry-After, capped), so
-- an attempt found already recorded after a worker crash hands over with
-- the receiver's requested wait rather than the default backoff.
ALTER TABLE webhook_deliveries ADD COLUMN retry_delay_ms BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN retry_delay_ms;
