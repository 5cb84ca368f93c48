-- +goose Up
-- An attempt is numbered by what was sent, not by claims. A claim whose
-- lease ended with neither a record nor a release (its worker killed, or
-- the database away past the lease) was most likely never sent: the next
-- claim takes the same attempt number instead of spending one the receiver
-- never saw. So a delivery ends failed after its six attempts were sent,
-- not after five sends and one lost claim.
--
-- Bounded: a delivery reuses a number for at most two lost claims in its
-- life (lost_claims); a third lost claim counts, as before, so one whose
-- attempts crash their worker still ends. claim_reused says whether the
-- claim that holds the lease now reused its number: its release then gives
-- back the lost claim it spent, not an attempt.
ALTER TABLE webhook_deliveries
    ADD COLUMN lost_claims  SMALLINT NOT NULL DEFAULT 0,
    ADD COLUMN claim_reused BOOLEAN  NOT NULL DEFAULT false;

-- The one rule: does a claim of a row whose lease is leased_until (the
-- claim only takes rows not leased now: NULL or ended) reuse its number?
CREATE FUNCTION claim_reuses_attempt(leased_until TIMESTAMPTZ, lost_claims SMALLINT) RETURNS BOOLEAN
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT leased_until IS NOT NULL AND lost_claims < 2
$$;

-- +goose Down
DROP FUNCTION claim_reuses_attempt(TIMESTAMPTZ, SMALLINT);
ALTER TABLE webhook_deliveries DROP COLUMN claim_reused, DROP COLUMN lost_claims;
