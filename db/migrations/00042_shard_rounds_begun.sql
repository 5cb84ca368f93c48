-- +goose Up
-- Each shard counts the rounds it has begun (one more as a round begins,
-- before its first claim). A wake-up the API signals is followed by a
-- round that begins after it; so while the count the API reads after a
-- commit is still the one it read before its last signal, the round that
-- signal brings has not begun, and will claim that commit: the API signals
-- a shard once a round rather than once a commit (dispatch.Waker). Each
-- signal is a write in Temporal.
ALTER TABLE shard_claim_promises ADD COLUMN rounds_begun BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE shard_claim_promises DROP COLUMN rounds_begun;
