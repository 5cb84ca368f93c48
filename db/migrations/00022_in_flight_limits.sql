-- +goose Up
-- The in-flight limit a worker last reported for a webhook whose limit had
-- moved from the initial one (activities.WebhookLimit): what the health
-- object and the web UI show. A row older than the limiter's idle time
-- (10 minutes) no longer holds: the limit has started again.
CREATE TABLE webhook_in_flight_limits (
    subscription_id     TEXT        PRIMARY KEY REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    in_flight_limit     INT         NOT NULL,
    in_flight           INT         NOT NULL,
    unloaded_latency_ms INT         NOT NULL,
    observed_at         TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE webhook_in_flight_limits;
