-- No upkeep: the update trigger does nothing (the queue goes stale; for the
-- lower bound only). txn_inline.sql runs with this function, keeping the
-- queue in its own statements.
CREATE OR REPLACE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END
$$;
