-- +goose Up
-- A shard's round under steady traffic promises to go on claiming until
-- claims_until (the database's clock): a delivery committed before then is
-- claimed by that round, or found by its last look for due work, so the
-- API need not wake the shard for it (dispatch.Waker reads these; a wake-up
-- is a signal and a history event in Temporal). One row a shard, for the
-- number of shards the workers run; a row past its time promises nothing.
CREATE TABLE shard_claim_promises (
    shards       INT         NOT NULL,
    shard        INT         NOT NULL,
    claims_until TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (shards, shard)
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE shard_claim_promises;
