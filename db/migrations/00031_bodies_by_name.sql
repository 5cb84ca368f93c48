-- +goose Up
-- A delivery's body in the spec's format is not stored: it is built from
-- the stored event and the webhook's name (deliveries.BuildBody, the same
-- bytes every time), so the delivery keeps only the name it was built
-- with, the first time (its first attempt, the feed, or the skip that
-- recorded it). A body in another format (Slack, Teams, PagerDuty: built
-- with the deployment's run links too) is still stored as its bytes. So a
-- delivery's body is fixed when payload or body_name is set, never both;
-- its event outlives it (PurgeEventsBefore), so it can always be built.
ALTER TABLE webhook_deliveries ADD COLUMN body_name TEXT;

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN body_name;
