-- The update trigger as one MERGE: one statement in the trigger instead of
-- two, and no ON CONFLICT (whose row lock writes a WAL record a row).
CREATE OR REPLACE FUNCTION webhook_delivery_queue_updated() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    MERGE INTO webhook_delivery_queue q
    USING updated n ON q.id = n.id
    WHEN MATCHED AND n.next_attempt_at IS NULL THEN DELETE
    WHEN MATCHED AND (q.route, q.next_attempt_at, q.leased_until, q.workflow_id)
                     IS DISTINCT FROM (n.route, n.next_attempt_at, n.leased_until, n.workflow_id) THEN
        UPDATE SET route = n.route, next_attempt_at = n.next_attempt_at, leased_until = n.leased_until,
            workflow_id = n.workflow_id
    WHEN NOT MATCHED AND n.next_attempt_at IS NOT NULL THEN
        INSERT (id, subscription_id, account_id, lane_key, route, run_id, event_type,
            created_at, next_attempt_at, leased_until, workflow_id)
        VALUES (n.id, n.subscription_id, n.account_id,
            (SELECT s.lane_key FROM webhook_subscriptions s WHERE s.id = n.subscription_id), n.route, n.run_id,
            n.event_type, n.created_at, n.next_attempt_at, n.leased_until, n.workflow_id);
    RETURN NULL;
END
$$;
