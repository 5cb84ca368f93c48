-- Queries of ingestion, webhooks' own lanes, the record of attempts (shard
-- and lane rounds alike) and Recent Deliveries.

-- name: IngestEvents :many
-- One statement per group of events: stores the events of known accounts
-- (an event id already stored is a duplicate and stores nothing; repeated
-- within the group, its first occurrence is stored), makes one delivery per
-- new event and matching webhook (spec 6 rules 1-2: naming the event type,
-- for every job or for this job) that its routing lets through (below):
-- claimed for an active webhook, recorded skipped (no POST) for an
-- inactive one, and reports each input event
-- (kind 'event': whether its account exists and whether it was new), each
-- webhook that got deliveries to make (kind 'routed', to wake whoever
-- takes them) and each skipped one.
-- A delivery id is the second it is made and a key derived from its event
-- and webhook (webhook_delivery_id; DeliveryKey is the same key).
-- An event's webhooks are found by index, not by reading the account's:
-- those for every job (a partial index) and those naming its job
-- (webhook_job_matches, kept in step with job_ids by a trigger).
-- The sequence: each webhook's deliveries are numbered on from its counter
-- (webhook_delivery_sequences), in the group's event order, and the
-- counter moves by as many in the same statement, so a number is used
-- exactly when its delivery is stored (no gap, no repeat). The counters are
-- taken in webhook id order, so concurrent group commits wait for each
-- other's rows, never in a cycle; the counter's row lock, held to commit,
-- makes the numbers follow commit order.
-- Routing (docs/delivery.md):
--   - versions: the caller read each account's routing (its filters, and
--     whether any webhook follows states) as of routing_versions (per
--     event; 0: the account never had routing). An account whose
--     webhook_routing_versions differs stores nothing: the whole group
--     stores nothing and reports each such account (kind 'stale'), for
--     the caller to read its routing again and retry.
--   - filters: the caller judged each event against its account's filters
--     and names the deliveries they rejected by their keys
--     (rejected_delivery_keys: DeliveryKey, an id's last 18 digits), not
--     made.
--   - state change: a webhook with notify_state_change gets an event's
--     delivery only when the outcome flips the job's state in
--     webhook_job_states (errored after not failing, completed after
--     failing; started never), outcomes ordered by outcome_ats, then
--     run_keys. The states are taken (upserted) in (webhook, job) order
--     before any counter, so two group commits never wait in a cycle.
WITH input AS (
    SELECT unnest(sqlc.arg(ids)::text[]) AS id, unnest(sqlc.arg(account_ids)::bigint[]) AS account_id,
        unnest(sqlc.arg(event_types)::text[]) AS event_type, unnest(sqlc.arg(job_ids)::text[]) AS job_id,
        unnest(sqlc.arg(run_ids)::text[]) AS run_id, unnest(sqlc.arg(datas)::bytea[]) AS data,
        unnest(sqlc.arg(tool_names)::text[]) AS tool_name,
        unnest(sqlc.arg(trace_parents)::bytea[]) AS trace_parent,
        unnest(sqlc.arg(routing_versions)::bigint[]) AS routing_version,
        -- Set-returning functions in a select list advance in step: the
        -- event's place in the group.
        generate_series(1, cardinality(sqlc.arg(ids)::text[])) AS ord
), known AS (
    -- The group's accounts found by key, each once (an array of ids):
    -- as a join, the generic plan merged the sorted group with the whole
    -- accounts key from its start, reading every account up to the
    -- group's highest id in every call (20,000 accounts: 7.8 ms a call).
    SELECT i.* FROM input i
    WHERE i.account_id = ANY (ARRAY(SELECT a.id FROM accounts a WHERE a.id = ANY (sqlc.arg(account_ids)::bigint[])))
), stale AS (
    SELECT k.account_id FROM (SELECT DISTINCT k.account_id, k.routing_version FROM known k) k
    WHERE k.routing_version <> COALESCE(
        (SELECT v.version FROM webhook_routing_versions v WHERE v.account_id = k.account_id), 0)
), firsts AS (
    SELECT DISTINCT ON (k.id) k.* FROM known k
    WHERE NOT EXISTS (SELECT 1 FROM stale)
    ORDER BY k.id, k.ord
), near AS (
    -- Whether a partition starts within 30 s (migration 00036).
    SELECT EXISTS (SELECT 1 FROM webhook_delivery_partitions p
        WHERE p.starts_at BETWEEN now() - interval '30 seconds' AND now() + interval '30 seconds') AS start
), boundary AS (
    -- Near a partition's start each id is also claimed here, in id order:
    -- a statement on the other side of the start storing the same id meets
    -- this one at the primary key, and the later one stores nothing.
    INSERT INTO webhook_event_boundary_ids (id)
    SELECT f.id FROM firsts f WHERE (SELECT n.start FROM near n)
    ORDER BY f.id
    ON CONFLICT DO NOTHING
    RETURNING id
), ev AS (
    INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, trace_parent)
    SELECT f.id, f.account_id, f.event_type, f.job_id, f.run_id, f.data, f.tool_name, f.trace_parent
    FROM firsts f
    -- An id is stored once (migration 00036): a partition's primary key
    -- finds a repeat in the same partition, this an earlier one's, and the
    -- boundary's claim one on the other side of a start. OFFSET 0 keeps the
    -- look a probe of each partition's key per event: as an anti join, the
    -- generic plan hashed every stored event's id each call.
    WHERE NOT EXISTS (SELECT 1 FROM webhook_events o WHERE o.id = f.id OFFSET 0)
      AND (NOT (SELECT n.start FROM near n) OR f.id IN (SELECT b.id FROM boundary b))
    ON CONFLICT DO NOTHING
    RETURNING id, account_id, event_type, job_id, run_id
), matching AS (
    SELECT webhook_delivery_id(now(), ev.id || '/' || s.id) AS id,
        ev.id AS event_id, ev.account_id, ev.event_type, ev.job_id, ev.run_id,
        -- The event's first place in the group (firsts stored that one).
        array_position(sqlc.arg(ids)::text[], ev.id) AS ord,
        s.id AS subscription_id, s.delivery_route, s.active, s.notify_state_change
    FROM ev
    CROSS JOIN LATERAL (
        SELECT a.id, a.delivery_route, true AS active, a.notify_state_change FROM webhook_subscriptions a
        WHERE a.account_id = ev.account_id AND cardinality(a.job_ids) = 0 AND a.deleted_at IS NULL
          AND a.active AND ev.event_type = ANY (a.event_types)
        UNION ALL
        SELECT a.id, a.delivery_route, false, a.notify_state_change FROM webhook_subscriptions a
        WHERE a.account_id = ev.account_id AND cardinality(a.job_ids) = 0 AND a.deleted_at IS NULL
          AND NOT a.active AND ev.event_type = ANY (a.event_types)
        UNION ALL
        SELECT j.id, j.delivery_route, j.active, j.notify_state_change
        FROM webhook_job_matches m JOIN webhook_subscriptions j ON j.id = m.subscription_id
        WHERE m.account_id = ev.account_id
          AND m.job_id = CASE WHEN ev.job_id ~ '^[0-9]{1,18}$' THEN ev.job_id::bigint END
          AND j.deleted_at IS NULL AND ev.event_type = ANY (j.event_types)
    ) s
), matched AS (
    -- The deliveries the webhooks' filters let through (a hashed lookup,
    -- made only when some were rejected).
    SELECT m.* FROM matching m
    WHERE cardinality(sqlc.arg(rejected_delivery_keys)::text[]) = 0
       OR right(m.id, 18) NOT IN (SELECT unnest(sqlc.arg(rejected_delivery_keys)::text[]))
), outcomes AS (
    -- The outcomes state-change webhooks see, with the number of the same
    -- job's recoveries after each in the group.
    SELECT o.*, count(*) FILTER (WHERE NOT o.failing) OVER (
            PARTITION BY o.subscription_id, o.job_id ORDER BY o.outcome_at, o.run_key, o.ord
            ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS recoveries_after
    FROM (
        SELECT m.id, m.subscription_id, m.job_id, m.run_id, m.ord, m.event_type = 'job.run.errored' AS failing,
            (sqlc.arg(outcome_ats)::timestamptz[])[m.ord] AS outcome_at, (sqlc.arg(run_keys)::bytea[])[m.ord] AS run_key
        FROM matched m
        WHERE m.notify_state_change AND m.event_type IN ('job.run.errored', 'job.run.completed')
    ) o
), latest AS (
    -- Each job's newest outcome in the group, and when its failing streak
    -- began (its first failure after its last recovery in the group).
    SELECT DISTINCT ON (o.subscription_id, o.job_id) o.*,
        (SELECT min(f.outcome_at) FROM outcomes f
         WHERE f.subscription_id = o.subscription_id AND f.job_id = o.job_id
           AND f.failing AND f.recoveries_after = 0) AS failing_since
    FROM outcomes o
    ORDER BY o.subscription_id, o.job_id, o.outcome_at DESC, o.run_key DESC, o.ord DESC
), states AS (
    INSERT INTO webhook_job_states AS w (subscription_id, job_id, failing, failing_since, outcome_at,
        outcome_run_id, outcome_run_key, previous_failing, previous_outcome_at, previous_run_key)
    SELECT l.subscription_id, l.job_id, l.failing, CASE WHEN l.failing THEN l.failing_since END, l.outcome_at,
        l.run_id, l.run_key, false, NULL, NULL
    FROM latest l
    ORDER BY l.subscription_id, l.job_id
    ON CONFLICT (subscription_id, job_id) DO UPDATE SET
        failing = excluded.failing,
        -- Still failing with no recovery newer than the stored outcome: the
        -- same streak; else the first failure newer than the stored outcome
        -- and than the group's last recovery.
        failing_since = CASE
            WHEN NOT excluded.failing THEN NULL
            WHEN w.failing AND NOT EXISTS (
                SELECT 1 FROM outcomes o
                WHERE o.subscription_id = w.subscription_id AND o.job_id = w.job_id AND NOT o.failing
                  AND (o.outcome_at, o.run_key) > (w.outcome_at, w.outcome_run_key)) THEN w.failing_since
            ELSE (
                SELECT min(o.outcome_at) FROM outcomes o
                WHERE o.subscription_id = w.subscription_id AND o.job_id = w.job_id AND o.failing
                  AND o.recoveries_after = 0 AND (o.outcome_at, o.run_key) > (w.outcome_at, w.outcome_run_key))
        END,
        outcome_at = excluded.outcome_at, outcome_run_id = excluded.outcome_run_id,
        outcome_run_key = excluded.outcome_run_key,
        previous_failing = w.failing, previous_outcome_at = w.outcome_at, previous_run_key = w.outcome_run_key
    -- An outcome older than the stored one changes nothing.
    WHERE (excluded.outcome_at, excluded.outcome_run_key) > (w.outcome_at, w.outcome_run_key)
    RETURNING subscription_id, job_id, previous_failing, previous_outcome_at, previous_run_key
), flips AS (
    -- The outcomes newer than the state they found that flip it, each
    -- against the one before it.
    SELECT n.id FROM (
        SELECT o.id, o.failing IS DISTINCT FROM COALESCE(
                lag(o.failing) OVER (PARTITION BY o.subscription_id, o.job_id ORDER BY o.outcome_at, o.run_key, o.ord),
                st.previous_failing) AS flips
        FROM outcomes o
        JOIN states st ON st.subscription_id = o.subscription_id AND st.job_id = o.job_id
        WHERE st.previous_outcome_at IS NULL
           OR (o.outcome_at, o.run_key) > (st.previous_outcome_at, st.previous_run_key)
    ) n
    WHERE n.flips
), kept AS (
    -- (flips is read only for a state-change webhook's deliveries.)
    SELECT m.* FROM matched m
    WHERE NOT m.notify_state_change OR m.id IN (SELECT f.id FROM flips f)
), numbered AS (
    -- Every kept delivery is new: its event is (ev), and no delivery
    -- outlives its event (a partition goes with its events), so ON CONFLICT below never skips one
    -- that took a number.
    SELECT m.*, row_number() OVER (PARTITION BY m.subscription_id ORDER BY m.ord) AS nth
    FROM kept m
), seq AS (
    INSERT INTO webhook_delivery_sequences AS q (subscription_id, last_sequence)
    SELECT c.subscription_id, c.n
    FROM (SELECT n.subscription_id, count(*) AS n FROM numbered n GROUP BY n.subscription_id) c
    ORDER BY c.subscription_id
    ON CONFLICT (subscription_id) DO UPDATE SET last_sequence = q.last_sequence + excluded.last_sequence
    RETURNING q.subscription_id, q.last_sequence
), counters AS (
    -- Each webhook's counter after this statement, by webhook id: one row,
    -- so each delivery looks its webhook up rather than joining.
    SELECT jsonb_object_agg(seq.subscription_id, seq.last_sequence) AS last FROM seq
), sequenced AS (
    SELECT n.*, (c.last ->> n.subscription_id)::bigint - (count(*) OVER (PARTITION BY n.subscription_id)) + n.nth AS sequence
    FROM numbered n CROSS JOIN counters c
), made AS (
    -- One insert for both kinds (claimed, skipped): each statement's rows
    -- are read once.
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        workflow_id, next_attempt_at, route, status, completed_at, last_error, sequence)
    SELECT sq.id, sq.account_id, sq.subscription_id, sq.event_id, sq.event_type, sq.job_id, sq.run_id,
        CASE WHEN sq.active THEN '' ELSE 'webhook/' || sq.subscription_id END,
        CASE WHEN sq.active THEN now() END,
        CASE WHEN sq.active THEN sq.delivery_route ELSE 'shared' END,
        CASE WHEN sq.active THEN 'pending' ELSE 'skipped' END,
        CASE WHEN NOT sq.active THEN now() END,
        CASE WHEN sq.active THEN '' ELSE 'the webhook was inactive' END,
        sq.sequence
    FROM sequenced sq
    ON CONFLICT DO NOTHING
    RETURNING id, subscription_id, account_id, route, status = 'skipped' AS skipped
)
SELECT 'event'::text AS kind, i.id::text AS id, i.account_id::bigint AS account_id,
       EXISTS (SELECT 1 FROM known k WHERE k.id = i.id)::boolean AS account_known,
       EXISTS (SELECT 1 FROM ev WHERE ev.id = i.id)::boolean AS stored,
       ''::text AS route, 0::int AS lane_key
FROM input i
UNION ALL
-- Each account whose routing the caller must read again (kind 'stale').
SELECT 'stale', '', st.account_id, true, false, '', 0
FROM stale st
UNION ALL
-- Each webhook with deliveries to make once (kind 'routed'), each skipped
-- delivery (kind 'skipped').
-- A routed webhook's lane key is its row's (its destination's), read once
-- per webhook.
SELECT r.kind, r.id, r.account_id, true, true, r.route,
    COALESCE((SELECT s.lane_key FROM webhook_subscriptions s WHERE r.kind = 'routed' AND s.id = r.id), 0)::int
FROM (
    SELECT DISTINCT CASE WHEN m.skipped THEN 'skipped' ELSE 'routed' END::text AS kind,
        CASE WHEN m.skipped THEN m.id ELSE m.subscription_id END::text AS id,
        CASE WHEN m.skipped THEN 0 ELSE m.account_id END::bigint AS account_id,
        CASE WHEN m.skipped THEN '' ELSE m.route END::text AS route
    FROM made m
) r;

-- name: IngestEventsWithoutRouting :many
-- IngestEvents for a group none of whose accounts has routing (filters or
-- state-change webhooks) as of the routing versions the caller read: the
-- same steps, answers and rules without the filters' and states' steps,
-- whose plan every statement would otherwise start (0.15-0.2 ms). A
-- version that is not the account's latest stores nothing, as there
-- (kind 'stale'): the account may have routing now.
WITH input AS (
    SELECT unnest(sqlc.arg(ids)::text[]) AS id, unnest(sqlc.arg(account_ids)::bigint[]) AS account_id,
        unnest(sqlc.arg(event_types)::text[]) AS event_type, unnest(sqlc.arg(job_ids)::text[]) AS job_id,
        unnest(sqlc.arg(run_ids)::text[]) AS run_id, unnest(sqlc.arg(datas)::bytea[]) AS data,
        unnest(sqlc.arg(tool_names)::text[]) AS tool_name,
        unnest(sqlc.arg(trace_parents)::bytea[]) AS trace_parent,
        unnest(sqlc.arg(routing_versions)::bigint[]) AS routing_version,
        -- Set-returning functions in a select list advance in step: the
        -- event's place in the group.
        generate_series(1, cardinality(sqlc.arg(ids)::text[])) AS ord
), known AS (
    -- The group's accounts found by key, each once (an array of ids):
    -- as a join, the generic plan merged the sorted group with the whole
    -- accounts key from its start, reading every account up to the
    -- group's highest id in every call (20,000 accounts: 7.8 ms a call).
    SELECT i.* FROM input i
    WHERE i.account_id = ANY (ARRAY(SELECT a.id FROM accounts a WHERE a.id = ANY (sqlc.arg(account_ids)::bigint[])))
), stale AS (
    SELECT k.account_id FROM (SELECT DISTINCT k.account_id, k.routing_version FROM known k) k
    WHERE k.routing_version <> COALESCE(
        (SELECT v.version FROM webhook_routing_versions v WHERE v.account_id = k.account_id), 0)
), firsts AS (
    SELECT DISTINCT ON (k.id) k.* FROM known k
    WHERE NOT EXISTS (SELECT 1 FROM stale)
    ORDER BY k.id, k.ord
), near AS (
    -- Whether a partition starts within 30 s (migration 00036).
    SELECT EXISTS (SELECT 1 FROM webhook_delivery_partitions p
        WHERE p.starts_at BETWEEN now() - interval '30 seconds' AND now() + interval '30 seconds') AS start
), boundary AS (
    -- Near a partition's start each id is also claimed here, in id order:
    -- a statement on the other side of the start storing the same id meets
    -- this one at the primary key, and the later one stores nothing.
    INSERT INTO webhook_event_boundary_ids (id)
    SELECT f.id FROM firsts f WHERE (SELECT n.start FROM near n)
    ORDER BY f.id
    ON CONFLICT DO NOTHING
    RETURNING id
), ev AS (
    INSERT INTO webhook_events (id, account_id, event_type, job_id, run_id, data, tool_name, trace_parent)
    SELECT f.id, f.account_id, f.event_type, f.job_id, f.run_id, f.data, f.tool_name, f.trace_parent
    FROM firsts f
    -- An id is stored once (migration 00036): a partition's primary key
    -- finds a repeat in the same partition, this an earlier one's, and the
    -- boundary's claim one on the other side of a start. OFFSET 0 keeps the
    -- look a probe of each partition's key per event: as an anti join, the
    -- generic plan hashed every stored event's id each call.
    WHERE NOT EXISTS (SELECT 1 FROM webhook_events o WHERE o.id = f.id OFFSET 0)
      AND (NOT (SELECT n.start FROM near n) OR f.id IN (SELECT b.id FROM boundary b))
    ON CONFLICT DO NOTHING
    RETURNING id, account_id, event_type, job_id, run_id
), matching AS (
    SELECT webhook_delivery_id(now(), ev.id || '/' || s.id) AS id,
        ev.id AS event_id, ev.account_id, ev.event_type, ev.job_id, ev.run_id,
        array_position(sqlc.arg(ids)::text[], ev.id) AS ord,
        s.id AS subscription_id, s.delivery_route, s.active
    FROM ev
    CROSS JOIN LATERAL (
        SELECT a.id, a.delivery_route, true AS active FROM webhook_subscriptions a
        WHERE a.account_id = ev.account_id AND cardinality(a.job_ids) = 0 AND a.deleted_at IS NULL
          AND a.active AND ev.event_type = ANY (a.event_types)
        UNION ALL
        SELECT a.id, a.delivery_route, false FROM webhook_subscriptions a
        WHERE a.account_id = ev.account_id AND cardinality(a.job_ids) = 0 AND a.deleted_at IS NULL
          AND NOT a.active AND ev.event_type = ANY (a.event_types)
        UNION ALL
        SELECT j.id, j.delivery_route, j.active
        FROM webhook_job_matches m JOIN webhook_subscriptions j ON j.id = m.subscription_id
        WHERE m.account_id = ev.account_id
          AND m.job_id = CASE WHEN ev.job_id ~ '^[0-9]{1,18}$' THEN ev.job_id::bigint END
          AND j.deleted_at IS NULL AND ev.event_type = ANY (j.event_types)
    ) s
), numbered AS (
    -- Every delivery is new: its event is (ev), and no delivery
    -- outlives its event (a partition goes with its events), so ON CONFLICT below never skips one
    -- that took a number.
    SELECT m.*, row_number() OVER (PARTITION BY m.subscription_id ORDER BY m.ord) AS nth
    FROM matching m
), seq AS (
    INSERT INTO webhook_delivery_sequences AS q (subscription_id, last_sequence)
    SELECT c.subscription_id, c.n
    FROM (SELECT n.subscription_id, count(*) AS n FROM numbered n GROUP BY n.subscription_id) c
    ORDER BY c.subscription_id
    ON CONFLICT (subscription_id) DO UPDATE SET last_sequence = q.last_sequence + excluded.last_sequence
    RETURNING q.subscription_id, q.last_sequence
), counters AS (
    -- Each webhook's counter after this statement, by webhook id: one row,
    -- so each delivery looks its webhook up rather than joining.
    SELECT jsonb_object_agg(seq.subscription_id, seq.last_sequence) AS last FROM seq
), sequenced AS (
    SELECT n.*, (c.last ->> n.subscription_id)::bigint - (count(*) OVER (PARTITION BY n.subscription_id)) + n.nth AS sequence
    FROM numbered n CROSS JOIN counters c
), made AS (
    -- One insert for both kinds (claimed, skipped): each statement's rows
    -- are read once.
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        workflow_id, next_attempt_at, route, status, completed_at, last_error, sequence)
    SELECT sq.id, sq.account_id, sq.subscription_id, sq.event_id, sq.event_type, sq.job_id, sq.run_id,
        CASE WHEN sq.active THEN '' ELSE 'webhook/' || sq.subscription_id END,
        CASE WHEN sq.active THEN now() END,
        CASE WHEN sq.active THEN sq.delivery_route ELSE 'shared' END,
        CASE WHEN sq.active THEN 'pending' ELSE 'skipped' END,
        CASE WHEN NOT sq.active THEN now() END,
        CASE WHEN sq.active THEN '' ELSE 'the webhook was inactive' END,
        sq.sequence
    FROM sequenced sq
    ON CONFLICT DO NOTHING
    RETURNING id, subscription_id, account_id, route, status = 'skipped' AS skipped
)
SELECT 'event'::text AS kind, i.id::text AS id, i.account_id::bigint AS account_id,
       EXISTS (SELECT 1 FROM known k WHERE k.id = i.id)::boolean AS account_known,
       EXISTS (SELECT 1 FROM ev WHERE ev.id = i.id)::boolean AS stored,
       ''::text AS route, 0::int AS lane_key
FROM input i
UNION ALL
-- Each account whose routing the caller must read again (kind 'stale').
SELECT 'stale', '', st.account_id, true, false, '', 0
FROM stale st
UNION ALL
-- Each webhook with deliveries to make once (kind 'routed'), each skipped
-- delivery (kind 'skipped').
-- A routed webhook's lane key is its row's (its destination's), read once
-- per webhook.
SELECT r.kind, r.id, r.account_id, true, true, r.route,
    COALESCE((SELECT s.lane_key FROM webhook_subscriptions s WHERE r.kind = 'routed' AND s.id = r.id), 0)::int
FROM (
    SELECT DISTINCT CASE WHEN m.skipped THEN 'skipped' ELSE 'routed' END::text AS kind,
        CASE WHEN m.skipped THEN m.id ELSE m.subscription_id END::text AS id,
        CASE WHEN m.skipped THEN 0 ELSE m.account_id END::bigint AS account_id,
        CASE WHEN m.skipped THEN '' ELSE m.route END::text AS route
    FROM made m
) r;

-- name: LoadWebhookTarget :one
-- What attempts need of a webhook as it is now (a round's, a fence's, a
-- test delivery's), the previous secret while it is valid included. No
-- row: it was deleted for good.
SELECT id, account_id, name, client_url, active, (deleted_at IS NOT NULL)::boolean AS deleted,
       delivery_route, secret_version, secret_key_id, secret_ciphertext,
       COALESCE(previous_secret_key_id, '')::text AS previous_secret_key_id,
       previous_secret_ciphertext,
       previous_secret_expires_at
FROM webhook_subscriptions
WHERE id = sqlc.arg(subscription_id);

-- name: ClaimDueDeliveries :many
-- Takes a page of the webhook's due deliveries for its own lane, oldest due
-- first (none while it is paused, nor while attempts handed over by a
-- shard's round are still leased: the webhook's in-flight cap counts
-- them): each counts one more attempt (an attempt whose outcome is lost is
-- still an attempt) and is leased for lease_ms (one attempt's timeout and a
-- margin), so a round run again after a crash does not send it twice
-- before the lease ends. The
-- lease is its own column, not indexed, so this update is HOT. The event's
-- data comes along for deliveries whose body is not fixed yet. Held
-- deliveries (an open breaker) are the probe's (ClaimProbe). Per-run order
-- as in ClaimShared.
WITH due_now AS (
    -- The webhook's due deliveries, from the queue (migration 00039).
    SELECT q.id FROM webhook_delivery_queue q
    WHERE q.subscription_id = sqlc.arg(subscription_id) AND q.next_attempt_at <= now()
      AND (q.leased_until IS NULL OR q.leased_until <= now()) AND q.route NOT IN ('paused', 'held')
      AND NOT EXISTS (
          SELECT 1 FROM webhook_delivery_queue x
          WHERE x.subscription_id = sqlc.arg(subscription_id)
            AND x.leased_until > now() AND x.workflow_id <> sqlc.arg(workflow_id))
    ORDER BY q.next_attempt_at, q.id
    LIMIT sqlc.arg(page_size)
), cand AS (
    -- Each taken by primary key and locked, as the record says it is now.
    SELECT d.id, d.event_id, d.run_id, d.event_type, d.created_at FROM webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT due_now.id FROM due_now))
      AND COALESCE(d.next_attempt_at, 'infinity') <= now()
      AND (d.leased_until IS NULL OR d.leased_until <= now()) AND d.route NOT IN ('paused', 'held')
    FOR UPDATE SKIP LOCKED
), judged AS (
    -- Per-run order, as in ClaimShared.
    SELECT cand.id, cand.event_id, cand.created_at, b.due AS earlier_due,
        cand.created_at <= now() - sqlc.arg(order_max_wait_ms)::bigint * interval '1 millisecond' AS order_expired
    FROM cand
    LEFT JOIN LATERAL (
        -- In flight (leased): look again in a moment (its record also
        -- releases the run's later events); else when it is due next.
        SELECT min(CASE WHEN p.leased_until > now() THEN now() ELSE p.next_attempt_at END) AS due
        FROM webhook_delivery_queue p
        -- p.run_id <> '' lets the planner use the partial index on
        -- (subscription_id, run_id), not scan the webhook's backlog.
        WHERE cand.run_id <> '' AND p.subscription_id = sqlc.arg(subscription_id) AND p.run_id = cand.run_id
          AND p.run_id <> '' AND p.id <> cand.id
          AND p.event_type = 'job.run.started' AND cand.event_type <> 'job.run.started'
    ) b ON true
), deferred AS (
    UPDATE webhook_deliveries d
    SET next_attempt_at = LEAST(GREATEST(j.earlier_due, now() + interval '200 milliseconds'),
                                j.created_at + sqlc.arg(order_max_wait_ms)::bigint * interval '1 millisecond')
    FROM judged j
    WHERE d.id = ANY (ARRAY(SELECT x.id FROM judged x WHERE x.earlier_due IS NOT NULL AND NOT x.order_expired))
      AND d.id = j.id
    RETURNING d.id
), due AS (
    SELECT j.id, j.event_id, j.earlier_due IS NOT NULL AS out_of_order FROM judged j
    WHERE j.earlier_due IS NULL OR j.order_expired
), due_events AS MATERIALIZED (
    -- Their events, read once by an array of their ids (as ClaimShared's
    -- claimed_events): a key probe of each partition in any plan.
    SELECT ev.id, ev.data, ev.tool_name, ev.accepted_at, ev.trace_parent FROM webhook_events ev
    WHERE ev.id = ANY (ARRAY(SELECT x.event_id FROM due x))
), claimed AS (
    UPDATE webhook_deliveries d
    -- A lost claim's number is reused (claim_reuses_attempt, migration 00030).
    SET attempt_count = d.attempt_count + CASE WHEN claim_reuses_attempt(d.leased_until, d.lost_claims) THEN 0 ELSE 1 END,
        lost_claims = d.lost_claims + CASE WHEN claim_reuses_attempt(d.leased_until, d.lost_claims) THEN 1 ELSE 0 END,
        claim_reused = claim_reuses_attempt(d.leased_until, d.lost_claims),
        leased_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
        workflow_id = sqlc.arg(workflow_id), workflow_run_id = webhook_uuid_or_null(sqlc.arg(workflow_run_id)::text), updated_at = now(),
        order_released_at = CASE WHEN due.out_of_order THEN COALESCE(d.order_released_at, now()) ELSE d.order_released_at END
    FROM due LEFT JOIN due_events e ON e.id = due.event_id
    -- The records by the array of their ids too: a key probe of each
    -- partition, whatever the plan's estimates (the statement may run on
    -- its generic plan once it has run often).
    WHERE d.id = ANY (ARRAY(SELECT x.id FROM due x)) AND d.id = due.id
    RETURNING d.id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.attempt_count, d.max_attempts,
        d.payload, COALESCE(d.body_name, '')::text AS body_name, e.data AS event_data, COALESCE(e.tool_name, '')::text AS event_tool_name,
        COALESCE(e.accepted_at, d.created_at)::timestamptz AS event_accepted_at,
        COALESCE(e.trace_parent, ''::bytea)::bytea AS event_trace_parent, COALESCE(d.sequence, 0)::bigint AS sequence,
        d.leased_until, d.next_attempt_at
)
-- Oldest due first, the page's order of attempts: an update returns its
-- rows in whatever order its plan (over the partitions) joined them.
SELECT c.id, c.event_id, c.event_type, c.job_id, c.run_id, c.is_test, c.attempt_count, c.max_attempts, c.payload,
    c.body_name, c.event_data, c.event_tool_name, c.event_accepted_at, c.event_trace_parent, c.sequence, c.leased_until
FROM claimed c
ORDER BY c.next_attempt_at, c.id;

-- name: RecordAttempts :many
-- One write for a group of outcomes (a round writes them in small groups
-- as they arrive), across their webhooks: each delivery's
-- summary (a retry_in_ms of -1 means final; otherwise it is due again
-- after that many ms), its body if the attempt fixed it, each attempt row
-- (idempotent), and each webhook's latest status (spec: http_status_code,
-- dispatched_at, from its latest attempt; an older attempt never moves it
-- back) and failure streak: a success resets it; a webhook whose
-- deliveries all failed for disable_after_ms with at least
-- disable_min_failures of them in a row is deactivated (disable_after_ms
-- 0: never). A final record is never changed. Concurrent writes touch
-- disjoint webhooks (shards own disjoint lane keys, and a round writes its
-- groups one after another) or one webhook each (lanes, attempts handed
-- over); a deadlock is retried by the caller.
-- The endpoint breaker: outages (1: the attempt failed as a receiver that
-- is down fails, 0: the receiver answered, -1: no attempt) keep each
-- webhook's attempt_failures_in_a_row; at breaker_threshold (0: never) a
-- closed breaker opens (breaker_opened_at, an incident), and an open one
-- closes when any attempt got an answer (breaker_closed_at: its lane's
-- drain ramps up from there). What an open breaker does to the webhook's
-- deliveries is its on_outage (its delivery settings; NULL:
-- default_on_outage): 'retry' (the spec's behaviour) leaves them on their
-- retry schedule, each ends 'failed' after its attempts, and the webhook
-- goes to its own lane (which keeps the incident's timers); 'hold' moves
-- it to the route 'held' (no round takes its deliveries; its lane sends
-- one probe, first after probe_first_ms, then after each backoff step,
-- doubling up to probe_max_ms; probes flags the probes' records: a late
-- record of an attempt made before the breaker opened is no failed probe).
-- A webhook whose on_outage changed while its breaker is open follows it
-- at its next record. A run's job.run.started that ends here releases the
-- run's later events to the webhook (per-run order: deliveries/run_order.go).
-- Returns each webhook, whether this write deactivated it, whether it
-- opened or closed its breaker, and whether it held its deliveries.
WITH r AS (
    SELECT unnest(sqlc.arg(delivery_ids)::text[]) AS delivery_id,
        unnest(sqlc.arg(subscription_ids)::text[]) AS subscription_id,
        unnest(sqlc.arg(attempt_numbers)::int[]) AS attempt_number,
        unnest(sqlc.arg(started_ats)::timestamptz[]) AS started_at,
        unnest(sqlc.arg(durations_ms)::int[]) AS duration_ms,
        unnest(sqlc.arg(status_codes)::int[]) AS status_code,
        unnest(sqlc.arg(error_kinds)::text[]) AS error_kind,
        unnest(sqlc.arg(error_messages)::text[]) AS error_message,
        unnest(sqlc.arg(snippets)::text[]) AS snippet,
        unnest(sqlc.arg(statuses)::text[]) AS status,
        unnest(sqlc.arg(retry_ins_ms)::bigint[]) AS retry_in_ms,
        unnest(sqlc.arg(payloads)::bytea[]) AS payload,
        unnest(sqlc.arg(body_names)::text[]) AS body_name,
        unnest(sqlc.arg(outages)::int[]) AS outage,
        unnest(sqlc.arg(probes)::boolean[]) AS probe,
        unnest(sqlc.arg(leases)::timestamptz[]) AS leased_until
), subs AS (
    -- Each webhook of the group as it is, read once for the decisions below.
    SELECT s.id, s.failed_deliveries_in_a_row, s.failing_since, s.streak_failures_answered_at,
        s.last_success_answered_at, s.last_answer_at, s.attempt_failures_in_a_row, s.active,
        s.breaker_opened_at, s.delivery_route, s.dispatched_at
    FROM webhook_subscriptions s
    WHERE s.id = ANY (ARRAY(SELECT DISTINCT r.subscription_id FROM r))
), upd AS (
    UPDATE webhook_deliveries d
    SET status = r.status, attempt_count = GREATEST(d.attempt_count, r.attempt_number), last_status_code = r.status_code,
        last_error = r.error_message, retry_delay_ms = GREATEST(r.retry_in_ms, 0),
        next_attempt_at = CASE WHEN r.retry_in_ms >= 0 THEN now() + r.retry_in_ms * interval '1 millisecond' END,
        leased_until = NULL,
        -- The body as the first record fixed it (migration 00031).
        payload = CASE WHEN d.payload IS NULL AND d.body_name IS NULL THEN r.payload ELSE d.payload END,
        body_name = CASE WHEN d.payload IS NULL AND d.body_name IS NULL THEN NULLIF(r.body_name, '') ELSE d.body_name END,
        completed_at = CASE WHEN r.retry_in_ms < 0 THEN now() END,
        updated_at = now()
    FROM r
    -- The records by the array of their ids as well as by the join: a key
    -- probe of each partition whatever the plan's estimates. By the join
    -- alone, a generic plan made while the partitions were empty (a new
    -- deployment's) hashed every record of every partition at each call.
    WHERE d.id = ANY (sqlc.arg(delivery_ids)::text[]) AND d.id = r.delivery_id
      AND d.status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
      -- A record of an attempt before the delivery's latest claim (its
      -- lease ended while the record waited, the database away, and a later
      -- round claimed it again, under the next number or, a lost claim's
      -- number reused, the same) changes the delivery only if it succeeded
      -- or no other claim holds the delivery now: a failure would release
      -- the later attempt's lease while it is in flight. Under a reused
      -- number only the record naming the live claim's lease is that
      -- claim's. Its attempt row is written all the same (below).
      AND (r.attempt_number > d.attempt_count OR r.status = 'succeeded'
           OR (r.attempt_number = d.attempt_count
               AND (NOT d.claim_reused OR d.leased_until IS NULL OR d.leased_until <= now()
                    OR d.leased_until = r.leased_until)))
    RETURNING d.id, d.subscription_id, d.status, d.run_id, d.event_type
), released AS (
    -- Per-run order: a run's job.run.started that is final lets the run's
    -- later events to the same webhook, deferred while it was pending, go
    -- now.
    -- (Found through the index of pending deliveries by run, then taken
    -- by primary key: never a scan, whatever the planner guesses of upd.)
    UPDATE webhook_deliveries f
    SET next_attempt_at = now()
    WHERE f.id = ANY (ARRAY(
        SELECT p.id
        FROM upd
        CROSS JOIN LATERAL (
            SELECT w.id FROM webhook_delivery_queue w
            WHERE w.subscription_id = upd.subscription_id AND w.run_id = upd.run_id AND w.run_id <> ''
              AND w.next_attempt_at > now()
              AND w.event_type <> 'job.run.started'
        ) p
        WHERE upd.event_type = 'job.run.started' AND upd.run_id <> ''
          AND upd.status IN ('succeeded', 'failed', 'cancelled', 'skipped')))
      AND f.next_attempt_at > now() AND (f.leased_until IS NULL OR f.leased_until <= now())
      AND f.id <> ALL (sqlc.arg(delivery_ids)::text[])
    RETURNING f.id
), att AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms,
        status_code, error_kind, error_message, response_snippet)
    SELECT r.delivery_id, r.attempt_number, r.started_at, r.duration_ms, r.status_code, r.error_kind,
        r.error_message, r.snippet
    FROM r WHERE r.started_at > 'epoch'::timestamptz
    -- One number sent twice (a lost claim's number reused after all: its
    -- request went out) keeps its first record, unless a later one is the
    -- success that ended the delivery.
    ON CONFLICT (delivery_id, attempt_number) DO UPDATE
    SET started_at = EXCLUDED.started_at, duration_ms = EXCLUDED.duration_ms, status_code = EXCLUDED.status_code,
        error_kind = EXCLUDED.error_kind, error_message = EXCLUDED.error_message, response_snippet = EXCLUDED.response_snippet
    WHERE EXCLUDED.error_kind = '' AND EXCLUDED.status_code BETWEEN 200 AND 299
      AND NOT (webhook_delivery_attempts.error_kind = '' AND webhook_delivery_attempts.status_code BETWEEN 200 AND 299)
    RETURNING delivery_id
), answers AS (
    -- The deliveries this write ended, each with when its receiver
    -- answered (its attempt's start and duration; now without an attempt):
    -- the failure streak follows the order receivers answered in, however
    -- outcomes are grouped and written.
    SELECT upd.subscription_id, upd.status,
        CASE WHEN r.started_at > 'epoch'::timestamptz THEN r.started_at + r.duration_ms * interval '1 millisecond'
             ELSE now() END AS answered_at
    FROM upd JOIN r ON r.delivery_id = upd.id
    WHERE upd.status IN ('succeeded', 'failed')
), streak_seen AS (
    -- Each webhook's failed deliveries in a row, in answer order (with
    -- streak_kept and delivery_streak). A success newer than the last one
    -- ends the failures answered before it (reset); those answered after
    -- it (written earlier) stay in the streak, as
    -- streak_failures_answered_at tells (the streak's latest 16: when all
    -- of them came after the success, its older failures may have too,
    -- and the streak is kept whole). A failure answered before the latest
    -- success counts for nothing. failing_since is the answer time of the
    -- streak's first failure.
    SELECT s.id, s.failed_deliveries_in_a_row, s.failing_since, s.streak_failures_answered_at AS failures,
        GREATEST(a.success, s.last_success_answered_at) AS last_success,
        (a.success IS NOT NULL AND a.success > COALESCE(s.last_success_answered_at, '-infinity'::timestamptz)
         AND NOT (cardinality(s.streak_failures_answered_at) >= 16
                  AND s.streak_failures_answered_at[cardinality(s.streak_failures_answered_at)] > a.success)) AS reset,
        a.success
    FROM subs s
    LEFT JOIN (SELECT an.subscription_id, max(an.answered_at) FILTER (WHERE an.status = 'succeeded') AS success
               FROM answers an GROUP BY an.subscription_id) a ON a.subscription_id = s.id
), streak_kept AS (
    SELECT sn.id, sn.last_success, sn.reset,
        CASE WHEN sn.reset THEN ARRAY(SELECT x FROM unnest(sn.failures) x WHERE x > sn.success ORDER BY x DESC)
             ELSE sn.failures END AS kept,
        sn.failed_deliveries_in_a_row AS count_before, sn.failing_since AS since_before
    FROM streak_seen sn
), delivery_streak AS (
    SELECT sk.id, sk.last_success, COALESCE(nf.n, 0) AS new_failures,
        (CASE WHEN sk.reset THEN cardinality(sk.kept) ELSE sk.count_before END + COALESCE(nf.n, 0))::int AS failed_in_a_row,
        LEAST(CASE WHEN sk.reset THEN sk.kept[cardinality(sk.kept)] ELSE sk.since_before END, nf.first) AS failing_since,
        ARRAY(SELECT x FROM unnest(sk.kept || COALESCE(nf.times, '{}')) x ORDER BY x DESC LIMIT 16) AS failures
    FROM streak_kept sk
    LEFT JOIN (
        SELECT an.subscription_id, count(*) AS n, min(an.answered_at) AS first, array_agg(an.answered_at) AS times
        FROM answers an
        JOIN streak_kept k2 ON k2.id = an.subscription_id
        WHERE an.status = 'failed' AND an.answered_at > COALESCE(k2.last_success, '-infinity'::timestamptz)
        GROUP BY an.subscription_id
    ) nf ON nf.subscription_id = sk.id
), latest AS (
    SELECT DISTINCT ON (r.subscription_id) r.subscription_id, r.started_at, r.status_code
    FROM r WHERE r.started_at > 'epoch'::timestamptz
    ORDER BY r.subscription_id, r.started_at DESC
), answered AS (
    SELECT r.subscription_id, max(r.started_at) AS last_answer
    FROM r WHERE r.outage = 0 GROUP BY r.subscription_id
), streak AS (
    -- The breaker's attempts in a row that failed as an outage, in the
    -- order they were sent, however they are written: an answer newer than
    -- the last one recorded ends the run (answered); an outage sent before
    -- the latest answer, written late, does not count.
    SELECT s.id, (an.last_answer IS NOT NULL AND an.last_answer > COALESCE(s.last_answer_at, '-infinity'::timestamptz)) AS answered,
        GREATEST(an.last_answer, s.last_answer_at) AS last_answer,
        count(r.delivery_id) FILTER (WHERE r.outage = 1
            AND r.started_at > COALESCE(GREATEST(an.last_answer, s.last_answer_at), '-infinity'::timestamptz)) AS failures,
        count(r.delivery_id) FILTER (WHERE r.outage = 1 AND r.probe) AS failed_probes
    FROM subs s
    LEFT JOIN answered an ON an.subscription_id = s.id
    LEFT JOIN r ON r.subscription_id = s.id
    GROUP BY s.id, an.last_answer, s.last_answer_at
), decision AS (
    SELECT s.id, st.last_answer, dst.failed_in_a_row, dst.failing_since AS failing_since_after, dst.last_success, dst.failures AS streak_failures,
        (CASE WHEN st.answered THEN 0 ELSE s.attempt_failures_in_a_row END + st.failures)::int AS failures_in_a_row,
        (sqlc.arg(breaker_threshold)::int > 0 AND s.active AND s.breaker_opened_at IS NULL
         AND s.delivery_route IN ('shared', 'own')
         AND CASE WHEN st.answered THEN 0 ELSE s.attempt_failures_in_a_row END + st.failures >= sqlc.arg(breaker_threshold)::int
        ) AS open_breaker,
        (s.breaker_opened_at IS NOT NULL AND st.answered) AS close_breaker,
        (s.breaker_opened_at IS NOT NULL AND NOT st.answered AND st.failed_probes > 0) AS probe_failed,
        COALESCE(ds.on_outage, sqlc.arg(default_on_outage)::text) = 'hold' AS hold,
        l.started_at AS latest_started_at, COALESCE(l.status_code, 0) AS latest_status_code,
        (sqlc.arg(disable_after_ms)::bigint > 0 AND s.active AND (
            (dst.new_failures > 0
             AND dst.failed_in_a_row >= sqlc.arg(disable_min_failures)::int
             AND dst.failing_since <= now() - sqlc.arg(disable_after_ms)::bigint * interval '1 millisecond')
            -- Held deliveries spend no retries: every probe failing for
            -- as long deactivates the webhook just the same.
            OR (s.breaker_opened_at IS NOT NULL AND NOT st.answered AND st.failed_probes > 0
             AND s.breaker_opened_at <= now() - sqlc.arg(disable_after_ms)::bigint * interval '1 millisecond'))
        ) AS disable,
        s.breaker_opened_at AS was_open_since, s.delivery_route AS route_before,
        (l.started_at IS NOT NULL AND (s.dispatched_at IS NULL OR s.dispatched_at <= l.started_at)) AS newer
    FROM subs s
    JOIN streak st ON st.id = s.id
    JOIN delivery_streak dst ON dst.id = s.id
    LEFT JOIN webhook_delivery_settings ds ON ds.subscription_id = s.id
    LEFT JOIN latest l ON l.subscription_id = s.id
), plan AS (
    -- The one place that decides a webhook's route from its breaker: an
    -- open breaker (opened now, or still open) holds the deliveries of a
    -- webhook on 'hold' and leaves those of one on 'retry' where they are,
    -- on their schedule (a receiver that fails fast costs a shared round
    -- nothing; one that hangs moves by the patience); a closed one gives
    -- held deliveries to its lane.
    -- Each change it makes is a transition of the table in
    -- deliveries/routes.go (TestRoutes_StatementsMakeOnlyTableTransitions).
    SELECT dc.*,
        (CASE WHEN dc.disable AND dc.route_before = 'held' THEN 'own'
              WHEN dc.disable THEN dc.route_before
              WHEN dc.close_breaker AND dc.route_before = 'held' THEN 'own'
              WHEN NOT (dc.open_breaker OR (dc.was_open_since IS NOT NULL AND NOT dc.close_breaker)) THEN dc.route_before
              WHEN dc.hold AND dc.route_before IN ('shared', 'own') THEN 'held'
              WHEN NOT dc.hold AND dc.route_before = 'held' THEN 'own'
              ELSE dc.route_before END)::text AS route_after
    FROM decision dc
)
UPDATE webhook_subscriptions s
SET http_status_code = CASE WHEN dc.newer AND dc.latest_status_code > 0 THEN dc.latest_status_code
                            ELSE s.http_status_code END,
    dispatched_at = CASE WHEN dc.newer THEN dc.latest_started_at ELSE s.dispatched_at END,
    failed_deliveries_in_a_row = dc.failed_in_a_row,
    failing_since = dc.failing_since_after,
    last_success_answered_at = dc.last_success,
    streak_failures_answered_at = dc.streak_failures,
    last_answer_at = dc.last_answer,
    active = CASE WHEN dc.disable THEN false ELSE s.active END,
    disabled_at = CASE WHEN dc.disable THEN now() ELSE s.disabled_at END,
    disabled_reason = CASE WHEN dc.disable AND dc.was_open_since IS NOT NULL AND dc.route_before = 'held'
            THEN format('Every probe failed since the breaker opened at %s.',
                to_char(dc.was_open_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'))
        WHEN dc.disable THEN format('Every delivery failed since %s: %s failed in a row.',
            to_char(dc.failing_since_after AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'), dc.failed_in_a_row)
        ELSE s.disabled_reason END,
    attempt_failures_in_a_row = dc.failures_in_a_row,
    delivery_route = dc.route_after,
    route_changed_at = CASE WHEN NOT dc.disable AND dc.route_after <> dc.route_before THEN now() ELSE s.route_changed_at END,
    route_reason = CASE WHEN dc.disable OR dc.route_after = dc.route_before THEN s.route_reason
                        WHEN dc.open_breaker AND dc.route_after = 'held'
                            THEN format('breaker open: %s attempts in a row failed; deliveries held', dc.failures_in_a_row)
                        WHEN dc.close_breaker THEN 'breaker closed: a probe was answered'
                        WHEN dc.route_after = 'held' THEN 'breaker open: the webhook now holds its deliveries during an outage'
                        ELSE 'breaker open: the webhook now retries its deliveries during an outage' END,
    breaker_opened_at = CASE WHEN dc.disable OR dc.close_breaker THEN NULL
                             WHEN dc.open_breaker THEN now() ELSE s.breaker_opened_at END,
    breaker_next_probe_at = CASE WHEN dc.disable OR dc.close_breaker OR dc.route_after <> 'held' THEN NULL
                                 WHEN dc.route_before <> 'held' THEN now() + sqlc.arg(probe_first_ms)::bigint * interval '1 millisecond'
                                 WHEN dc.probe_failed THEN now() + LEAST(sqlc.arg(probe_first_ms)::bigint * power(2, LEAST(s.breaker_failed_probes + 1, 30)),
                                     sqlc.arg(probe_max_ms)::bigint) * interval '1 millisecond'
                                 ELSE s.breaker_next_probe_at END,
    breaker_failed_probes = CASE WHEN dc.disable OR dc.close_breaker OR dc.open_breaker OR dc.route_after <> dc.route_before THEN 0
                                 WHEN dc.probe_failed THEN s.breaker_failed_probes + 1 ELSE s.breaker_failed_probes END,
    breaker_closed_at = CASE WHEN dc.close_breaker THEN now() ELSE s.breaker_closed_at END,
    incident_started_at = CASE WHEN (dc.open_breaker OR dc.disable) AND s.incident_started_at IS NULL THEN now()
                               ELSE s.incident_started_at END
FROM plan dc
WHERE s.id = dc.id
RETURNING s.id, s.account_id, dc.disable::boolean AS disabled_now,
    (dc.open_breaker AND NOT dc.disable)::boolean AS breaker_opened,
    (dc.close_breaker AND NOT dc.disable)::boolean AS breaker_closed,
    (dc.route_after = 'held' AND dc.route_before <> 'held')::boolean AS held_now,
    (dc.route_after = 'own' AND dc.route_before <> 'own')::boolean AS to_own_lane;

-- name: NextDue :many
-- When the webhook's next delivery is due, in ms from now (negative:
-- overdue), a leased one when its lease ends; no row when nothing is left
-- to deliver. Reads the first 250 in due order: more than a round leases.
SELECT (EXTRACT(EPOCH FROM (min(GREATEST(n.next_attempt_at, COALESCE(n.leased_until, n.next_attempt_at))) - now())) * 1000)::bigint AS due_in_ms
FROM (
    SELECT next_attempt_at, leased_until FROM webhook_delivery_queue
    WHERE subscription_id = sqlc.arg(subscription_id)
    ORDER BY next_attempt_at
    LIMIT 250
) n
HAVING count(*) > 0;

-- name: EndPendingDeliveries :execrows
-- Ends every delivery of a webhook that is not final: cancelled when it
-- was deleted, skipped (to be sent again on demand) when deactivated.
-- Not those whose attempt is in flight (leased): a receiver may be
-- answering 2xx, and skipped would then be untrue (and a replay of
-- skipped deliveries would send them again). Their record says what the
-- receiver answered; one that is not final is ended by the next claim of
-- the webhook's deliveries (a shard's, or its lane's, which the sweeper
-- wakes), as a lease that ends unrecorded is.
UPDATE webhook_deliveries
SET status = sqlc.arg(status)::text, last_error = sqlc.arg(reason), next_attempt_at = NULL, leased_until = NULL,
    updated_at = now(), completed_at = now()
WHERE id = ANY (ARRAY(SELECT q.id FROM webhook_delivery_queue q WHERE q.subscription_id = sqlc.arg(subscription_id)))
  AND next_attempt_at IS NOT NULL AND (leased_until IS NULL OR leased_until <= now());

-- name: RecordTestAttempt :exec
-- A test delivery's one attempt (spec 4.5): its record, created final, its
-- attempt row, and the webhook's latest status (a test is a dispatch too).
WITH del AS (
    INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
        is_test, payload, workflow_id, workflow_run_id, status, attempt_count, max_attempts,
        last_status_code, last_error, completed_at)
    VALUES (sqlc.arg(delivery_id), sqlc.arg(account_id), sqlc.arg(subscription_id), sqlc.arg(event_id),
        sqlc.arg(event_type), sqlc.arg(job_id), sqlc.arg(run_id), true, sqlc.arg(payload),
        sqlc.arg(workflow_id), webhook_uuid_or_null(sqlc.arg(workflow_run_id)::text), sqlc.arg(status), 1, 1,
        sqlc.arg(status_code), sqlc.arg(error_message), now())
    ON CONFLICT (id) DO NOTHING
    RETURNING id
), att AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms,
        status_code, error_kind, error_message, response_snippet)
    SELECT id, 1, sqlc.arg(started_at), sqlc.arg(duration_ms), sqlc.arg(status_code), sqlc.arg(error_kind),
        sqlc.arg(error_message), sqlc.arg(response_snippet)
    FROM del
    RETURNING delivery_id
)
UPDATE webhook_subscriptions s
SET http_status_code = CASE WHEN sqlc.arg(status_code)::int > 0 THEN sqlc.arg(status_code)::int ELSE s.http_status_code END,
    dispatched_at = sqlc.arg(started_at)::timestamptz
WHERE s.id = sqlc.arg(subscription_id) AND EXISTS (SELECT 1 FROM del)
  AND (s.dispatched_at IS NULL OR s.dispatched_at <= sqlc.arg(started_at)::timestamptz);

-- name: CreateRedelivery :one
-- A new delivery of a recorded delivery's exact body to the same webhook,
-- with its sequence number, due now on the shared route (the shard's claim
-- moves it to the webhook's route when it has another). Empty when the
-- original is not the account's webhook's. With the webhook's lane key, to
-- wake its shard.
INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, job_id, run_id,
    is_test, redelivery_of, payload, body_name, workflow_id, next_attempt_at, sequence)
SELECT sqlc.arg(new_id), o.account_id, o.subscription_id, o.event_id, o.event_type, o.job_id, o.run_id,
    o.is_test, o.id, o.payload, o.body_name, '', now(), o.sequence
FROM webhook_deliveries o
WHERE o.id = sqlc.arg(original_id) AND o.subscription_id = sqlc.arg(subscription_id)
  AND o.account_id = sqlc.arg(account_id)
RETURNING id, (SELECT s.lane_key FROM webhook_subscriptions s WHERE s.id = subscription_id)::int AS lane_key;

-- name: ListDeliveries :many
-- The last attempt's duration comes along (one primary-key lookup per row),
-- so a page of Recent Deliveries is one query.
SELECT d.id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test, d.redelivery_of, d.status,
       d.attempt_count, d.last_status_code, d.last_error, d.workflow_id, COALESCE(d.workflow_run_id::text, '')::text AS workflow_run_id, d.created_at,
       d.updated_at, d.completed_at, d.next_attempt_at, COALESCE(last.duration_ms, 0)::int AS last_duration_ms,
       (d.route = 'held')::boolean AS held
FROM webhook_deliveries d
LEFT JOIN LATERAL (
    SELECT a.duration_ms FROM webhook_delivery_attempts a
    WHERE a.delivery_id = d.id ORDER BY a.attempt_number DESC LIMIT 1
) last ON true
WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id)
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(row_limit) OFFSET sqlc.arg(row_offset);

-- name: CountDeliveries :one
SELECT count(*) FROM webhook_deliveries
WHERE subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id)
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status));

-- name: GetDelivery :one
-- A body fixed by its webhook's name (migration 00031) comes with its
-- event, to be built.
-- The event by its id as an array, a key probe of each partition in any
-- plan (docs/performance.md, "Planning").
SELECT sqlc.embed(d), e.data AS event_data, COALESCE(e.tool_name, '')::text AS event_tool_name,
    COALESCE(e.accepted_at, d.created_at)::timestamptz AS event_accepted_at
FROM webhook_deliveries d
LEFT JOIN webhook_events e ON d.payload IS NULL AND d.body_name IS NOT NULL AND e.id = d.event_id
    AND e.id = ANY (ARRAY(SELECT x.event_id FROM webhook_deliveries x WHERE x.id = sqlc.arg(id)))
WHERE d.id = sqlc.arg(id) AND d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id);

-- name: ListDeliveryAttempts :many
SELECT * FROM webhook_delivery_attempts
WHERE delivery_id = sqlc.arg(delivery_id)
ORDER BY attempt_number;

-- name: SubscriptionForDispatch :one
-- What the test endpoint and redelivery need of a live webhook.
SELECT id, name, event_types FROM webhook_subscriptions
WHERE id = sqlc.arg(id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL;

-- name: EnsureDeliveryPartitions :one
-- Makes the partitions of delivery records, attempts and events, each
-- width_seconds wide, until one holds until (migrations 00034-00036);
-- returns how many it made.
SELECT webhook_delivery_partitions_ensure(sqlc.arg(width_seconds)::bigint * interval '1 second', sqlc.arg(until)::timestamptz)::int AS made;

-- name: DeliveryPartitionsPast :many
-- The partitions of delivery records, attempts and events that end before
-- cutoff, hold only final deliveries and no event a later redelivery has,
-- oldest first (migration 00036).
SELECT p::text AS name FROM webhook_delivery_partitions_past(sqlc.arg(cutoff)::timestamptz) p;

-- name: ForgetDeliveryPartition :exec
-- The partition is gone (DropPartitions).
DELETE FROM webhook_delivery_partitions WHERE name = sqlc.arg(name);

-- name: DeliveryBacklog :one
-- Deliveries not final: all of them, and those due now (the backlog
-- metrics). Reads the queue of deliveries not final.
SELECT count(*) FILTER (WHERE next_attempt_at <= now())::bigint AS due, count(*)::bigint AS pending
FROM webhook_delivery_queue;

-- name: RecordLateAnswer :execrows
-- An answer that came after an attempt's deadline, once the attempt is
-- recorded (no row yet: 0 rows, the caller tries again).
UPDATE webhook_delivery_attempts
SET late_status_code = sqlc.arg(status_code), late_after_ms = sqlc.arg(after_ms)
WHERE delivery_id = sqlc.arg(delivery_id) AND attempt_number = sqlc.arg(attempt_number);

-- name: RecentAttemptTimes :one
-- The 50th and 95th percentiles of the webhook's last 100 attempts'
-- durations, in ms (0 without attempts): the web UI warns before
-- deliveries start failing.
SELECT COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.duration_ms), 0)::float8 AS p50_ms,
       COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY r.duration_ms), 0)::float8 AS p95_ms,
       count(*)::bigint AS attempts
FROM (
    SELECT a.duration_ms
    FROM webhook_deliveries d
    JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
    WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id)
    ORDER BY d.created_at DESC, a.attempt_number DESC
    LIMIT 100
) r;

-- name: WebhookState :one
-- A live webhook's failure streak and why it was disabled, if it was, and
-- whether it follows its jobs' states.
SELECT active, failed_deliveries_in_a_row, failing_since, disabled_at, disabled_reason, notify_state_change
FROM webhook_subscriptions
WHERE id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id) AND deleted_at IS NULL;

-- name: WebhookDeliveryCounts :many
-- A webhook's deliveries of the last 7 days by status, with those of the
-- last 24 hours and the latest completion: a range of the
-- (subscription_id, created_at) index, never older records.
SELECT status,
       count(*) FILTER (WHERE created_at >= now() - interval '24 hours')::bigint AS last_24h,
       count(*)::bigint AS last_7d,
       COALESCE(max(completed_at), 'epoch')::timestamptz AS last_completed_at
FROM webhook_deliveries
WHERE subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id)
  AND created_at >= now() - interval '7 days'
GROUP BY status;

-- name: WebhookAttemptCounts :many
-- The attempts of a webhook's deliveries of the last 7 days by outcome
-- (error kind, "" for success), with those of the last 24 hours.
SELECT a.error_kind,
       count(*) FILTER (WHERE a.started_at >= now() - interval '24 hours')::bigint AS last_24h,
       count(*)::bigint AS last_7d
FROM webhook_deliveries d
JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
WHERE d.subscription_id = sqlc.arg(subscription_id) AND d.account_id = sqlc.arg(account_id)
  AND d.created_at >= now() - interval '7 days'
GROUP BY a.error_kind;

-- name: AccountWebhookStates :many
-- Which of an account's webhooks were disabled automatically or are failing
-- (the web UI's list marks them).
SELECT id, (disabled_at IS NOT NULL)::boolean AS disabled, failed_deliveries_in_a_row
FROM webhook_subscriptions
WHERE account_id = sqlc.arg(account_id) AND deleted_at IS NULL
  AND (disabled_at IS NOT NULL OR failed_deliveries_in_a_row > 0);

-- name: WebhookHourly :many
-- A webhook's last 7 days hour by hour: deliveries by final outcome, and
-- the 95th percentile of their attempts' durations (ms); hours without
-- deliveries are absent. A range of the (subscription_id, created_at)
-- index and the attempts' primary key.
WITH d AS (
    SELECT date_trunc('hour', created_at) AS hour, id, status
    FROM webhook_deliveries
    WHERE subscription_id = sqlc.arg(subscription_id) AND account_id = sqlc.arg(account_id)
      AND created_at >= now() - interval '7 days'
), counts AS (
    SELECT hour,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status IN ('pending', 'retrying')) AS in_progress,
           count(*) FILTER (WHERE status IN ('skipped', 'cancelled')) AS not_sent
    FROM d GROUP BY hour
), times AS (
    SELECT d.hour, percentile_cont(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95_ms
    FROM d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
    GROUP BY d.hour
)
SELECT c.hour::timestamptz AS hour, c.succeeded::bigint AS succeeded, c.failed::bigint AS failed,
       c.in_progress::bigint AS in_progress, c.not_sent::bigint AS not_sent,
       COALESCE(t.p95_ms, 0)::float8 AS p95_ms
FROM counts c LEFT JOIN times t ON t.hour = c.hour
ORDER BY c.hour;

-- name: DeliveriesToBuild :many
-- What the bodies of deliveries without one are built from: their webhook
-- (its format) and stored event (skipped deliveries get theirs when
-- recorded).
-- Records and events are each read by an array of ids, a key probe of
-- each partition in any plan (docs/performance.md, "Planning").
WITH dels AS MATERIALIZED (
    SELECT d.id, d.event_id, d.event_type, d.subscription_id FROM webhook_deliveries d
    WHERE d.id = ANY (sqlc.arg(ids)::text[]) AND d.payload IS NULL AND d.body_name IS NULL
), evs AS MATERIALIZED (
    SELECT e.id, e.data, e.tool_name, e.accepted_at FROM webhook_events e
    WHERE e.id = ANY (ARRAY(SELECT dels.event_id FROM dels))
)
SELECT d.id, d.event_id, d.event_type, s.id AS subscription_id, s.account_id, s.name,
       e.data AS event_data, e.tool_name AS event_tool_name, e.accepted_at AS event_accepted_at,
       COALESCE(ds.format, 'standard')::text AS format
FROM dels d
JOIN webhook_subscriptions s ON s.id = d.subscription_id
JOIN evs e ON e.id = d.event_id
LEFT JOIN webhook_delivery_settings ds ON ds.subscription_id = s.id;

-- name: SetPayloads :exec
-- Fixes the bodies of deliveries that have none yet: the bytes, or the
-- webhook's name the spec's body was built with (migration 00031).
UPDATE webhook_deliveries d
SET payload = p.payload, body_name = NULLIF(p.body_name, '')
FROM (SELECT unnest(sqlc.arg(ids)::text[]) AS id, unnest(sqlc.arg(payloads)::bytea[]) AS payload,
             unnest(sqlc.arg(body_names)::text[]) AS body_name) p
-- The records by the array of their ids as well as by the join: a key
-- probe of each partition in any plan.
WHERE d.id = ANY (sqlc.arg(ids)::text[]) AND d.id = p.id AND d.payload IS NULL AND d.body_name IS NULL;

-- name: SaveInFlightLimits :exec
-- Keeps the in-flight limits a round reports (one row a webhook, the
-- latest report wins; webhooks deleted meanwhile are left out).
INSERT INTO webhook_in_flight_limits (subscription_id, in_flight_limit, in_flight, unloaded_latency_ms, observed_at)
SELECT i.id, (sqlc.arg(limits)::int[])[i.n], (sqlc.arg(in_flight)::int[])[i.n],
    (sqlc.arg(unloaded_latency_ms)::int[])[i.n], now()
FROM unnest(sqlc.arg(ids)::text[]) WITH ORDINALITY AS i(id, n)
JOIN webhook_subscriptions s ON s.id = i.id
ON CONFLICT (subscription_id) DO UPDATE
SET in_flight_limit = EXCLUDED.in_flight_limit, in_flight = EXCLUDED.in_flight,
    unloaded_latency_ms = EXCLUDED.unloaded_latency_ms, observed_at = EXCLUDED.observed_at;

-- name: InFlightLimit :many
-- The in-flight limit last reported for a webhook, if one was within
-- fresh_ms.
SELECT in_flight_limit, in_flight, unloaded_latency_ms, observed_at
FROM webhook_in_flight_limits
WHERE subscription_id = sqlc.arg(subscription_id)
  AND observed_at > now() - sqlc.arg(fresh_ms)::bigint * interval '1 millisecond';

-- name: UseIngestionPlans :exec
-- UseGenericIndexPlans for an ingestion statement (its look for a stored
-- event id probes each events partition's key, and a plan made while a
-- partition was empty would scan it whole once it had filled), each of
-- its statements bounded to 10 s (lock_timeout here, statement_timeout
-- after): two ingestion statements that overlap start within 20 s of each
-- other, which the boundary's claim of ids relies on (migration 00036).
SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true),
    set_config('enable_seqscan', 'off', true),
    set_config('statement_timeout', '10s', true), set_config('lock_timeout', '10s', true);

-- name: ForgetBoundaryEventIDs :execrows
-- The boundary's claims of event ids older than before (retention; a claim
-- matters only while a statement that overlaps its own could run).
DELETE FROM webhook_event_boundary_ids WHERE claimed_at < sqlc.arg(before);

-- name: UseGenericIndexPlans :exec
-- For the rest of the transaction, prepared statements run with their
-- generic plan (SET LOCAL plan_cache_mode), never compiled by JIT, and
-- read tables by their indexes: see deliveries.withGenericIndexPlans.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true),
    set_config('enable_seqscan', 'off', true);
