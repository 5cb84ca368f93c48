-- The update trigger as migration 00041 made it: a DELETE of the rows now
-- final, then an INSERT ... ON CONFLICT DO UPDATE of the others.
CREATE OR REPLACE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_delivery_queue q
    USING updated n
    WHERE q.id = n.id AND n.next_attempt_at IS NULL;
    INSERT INTO webhook_delivery_queue AS q (id, subscription_id, account_id, lane_key, route, run_id, event_type,
        created_at, next_attempt_at, leased_until, workflow_id)
    SELECT n.id, n.subscription_id, n.account_id, s.lane_key, n.route, n.run_id, n.event_type,
        n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id
    FROM updated n
    JOIN webhook_subscriptions s ON s.id = n.subscription_id
    WHERE n.next_attempt_at IS NOT NULL
    ON CONFLICT (id) DO UPDATE
    SET route = EXCLUDED.route, next_attempt_at = EXCLUDED.next_attempt_at, leased_until = EXCLUDED.leased_until,
        workflow_id = EXCLUDED.workflow_id
    WHERE (q.route, q.next_attempt_at, q.leased_until, q.workflow_id)
          IS DISTINCT FROM (EXCLUDED.route, EXCLUDED.next_attempt_at, EXCLUDED.leased_until, EXCLUDED.workflow_id);
    RETURN NULL;
END
$$;
