-- +goose Up
-- An answer that came after the attempt's deadline (the attempt failed as
-- a timeout and is retried): its status and when it came, so the
-- receiver's operator can see that it did answer.
ALTER TABLE webhook_delivery_attempts
    ADD COLUMN late_status_code INTEGER,
    ADD COLUMN late_after_ms    INTEGER;

-- +goose Down
ALTER TABLE webhook_delivery_attempts
    DROP COLUMN late_after_ms,
    DROP COLUMN late_status_code;
