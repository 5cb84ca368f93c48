-- +goose Up
-- A webhook's failure streak in the order its receiver answered, however
-- outcomes are grouped and written (RecordAttempts): when a delivery last
-- succeeded (the answer's time, not the record's), and the answer times
-- of the streak's latest failures (at most 16, oldest first), so that a
-- success written after later failures ends only the failures answered
-- before it. failing_since is the answer time of the streak's first
-- failure from now on. last_answer_at does the same for the endpoint
-- breaker: when an attempt last got an answer (its start), so an outage
-- sent before it and written after it does not count.
ALTER TABLE webhook_subscriptions
    ADD COLUMN last_success_answered_at TIMESTAMPTZ,
    ADD COLUMN streak_failures_answered_at TIMESTAMPTZ[] NOT NULL DEFAULT '{}',
    ADD COLUMN last_answer_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE webhook_subscriptions
    DROP COLUMN last_success_answered_at,
    DROP COLUMN streak_failures_answered_at,
    DROP COLUMN last_answer_at;
