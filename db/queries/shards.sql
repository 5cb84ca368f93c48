-- Queries of the delivery shards (workflow DeliverShard) and of the routes
-- that move a webhook between its shard, its own lane and a pause.

-- name: ClaimShared :many
-- Takes a page of a shard's due deliveries across its webhooks: the first
-- due deliveries of each of the shard's lane keys [lo, hi) are the
-- candidates (per_key of each while few keys have any due, fewer as more
-- do: about four pages in all, at least one a key; a first window of a
-- few a key finds which keys have any), and where
-- those fill a key's window, the oldest of each of the key's other
-- webhooks too, a window's worth at most (a busy webhook hides no other);
-- deliveries of live, active webhooks routed 'shared' are taken in turns
-- by account (each account's oldest first), each webhook at
-- most its room (rooms, else per_webhook), each destination at most its
-- room (dest_rooms, else per_destination), and page_size in all: only what
-- may start now. Each taken delivery counts
-- one more attempt and is leased (see ClaimDueDeliveries). In the same
-- statement, candidates whose webhook was deactivated end 'skipped' (its
-- deletion: 'cancelled'), and candidates of a webhook routed elsewhere
-- move to that route. Rows: kind 'claimed' (a taken delivery with what its
-- attempt needs: the event and the webhook as they are now), 'ended' or
-- 'moved' (id, subscription and account only; only of webhooks moved to
-- 'own', whose lanes the round wakes), and 'more' (one, empty) when it
-- held due deliveries back. Callers order claimed
-- deliveries by due_at, id. Per-run order (deliveries/run_order.go), judged on the page only: a
-- job.run.completed or job.run.errored whose run's job.run.started is still
-- pending for the same webhook (and not in the page) is not taken but
-- deferred (see settled) unless it has waited order_max_wait_ms since it
-- was accepted: then it goes, and order_released_at says so.
WITH first_window AS MATERIALIZED (
    -- The first due deliveries of every lane key of the shard, as few a
    -- key as four pages spread over all its keys give (at least one): a
    -- key with nothing due costs one index probe, and a backlog on every
    -- key costs about four pages.
    SELECT k.lane_key, c.id, c.subscription_id, c.account_id, c.next_attempt_at, c.run_id, c.event_type, c.created_at
    FROM generate_series(sqlc.arg(lo)::int, sqlc.arg(hi)::int - 1) AS k(lane_key)
    CROSS JOIN LATERAL (
        SELECT d.id, d.subscription_id, d.account_id, d.next_attempt_at, d.run_id, d.event_type, d.created_at
        FROM webhook_delivery_queue d
        WHERE d.lane_key = k.lane_key AND d.route = 'shared'
          AND d.next_attempt_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
        ORDER BY d.next_attempt_at
        LIMIT GREATEST(1, LEAST(sqlc.arg(per_key)::bigint,
                                4 * sqlc.arg(page_size)::bigint / (sqlc.arg(hi)::int - sqlc.arg(lo)::int)))
    ) c
), key_window AS MATERIALIZED (
    -- How many candidates each key with deliveries due gives: per_key
    -- while few keys have any (a busy webhook's key fills its room), less
    -- as more do, so that a claim reads about four pages of candidates
    -- however many keys have a backlog (at least one a key, and never
    -- fewer than the first window took).
    SELECT GREATEST(1, LEAST(sqlc.arg(per_key)::bigint,
                             4 * sqlc.arg(page_size)::bigint / GREATEST(count(DISTINCT f.lane_key), 1))) AS n
    FROM first_window f
), wider AS MATERIALIZED (
    -- Keys whose first window was full and whose window is wider: read
    -- again, to the wider window (usually the one or few busy keys).
    SELECT f.lane_key FROM first_window f
    GROUP BY f.lane_key
    HAVING count(*) >= GREATEST(1, LEAST(sqlc.arg(per_key)::bigint,
                                         4 * sqlc.arg(page_size)::bigint / (sqlc.arg(hi)::int - sqlc.arg(lo)::int)))
       AND count(*) < (SELECT kw.n FROM key_window kw)
), window_cand AS (
    SELECT f.lane_key, f.id, f.subscription_id, f.account_id, f.next_attempt_at, f.run_id, f.event_type, f.created_at
    FROM first_window f
    WHERE NOT EXISTS (SELECT 1 FROM wider w WHERE w.lane_key = f.lane_key)
    UNION ALL
    SELECT w.lane_key, c.id, c.subscription_id, c.account_id, c.next_attempt_at, c.run_id, c.event_type, c.created_at
    FROM wider w
    CROSS JOIN LATERAL (
        SELECT d.id, d.subscription_id, d.account_id, d.next_attempt_at, d.run_id, d.event_type, d.created_at
        FROM webhook_delivery_queue d
        WHERE d.lane_key = w.lane_key AND d.route = 'shared'
          AND d.next_attempt_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
        ORDER BY d.next_attempt_at
        LIMIT (SELECT kw.n FROM key_window kw)
    ) c
), judged_window AS MATERIALIZED (
    -- The window's candidates with their webhooks as they are now: read by
    -- primary key (OFFSET 0: whatever the plan's estimates, never a hash of
    -- the whole table, which a generic plan made while it was small would
    -- keep), and each one's rank among its webhook's.
    SELECT w.lane_key, w.id, w.subscription_id, w.account_id, w.next_attempt_at, w.run_id, w.event_type, w.created_at,
        s.active, s.deleted, s.delivery_route, s.dest,
        row_number() OVER (PARTITION BY w.subscription_id ORDER BY w.next_attempt_at, w.id) AS wrank
    FROM window_cand w
    CROSS JOIN LATERAL (
        SELECT s.active, (s.deleted_at IS NOT NULL) AS deleted, s.delivery_route,
            -- The destination its attempts share (migration 00024, as
            -- deliveries.DestinationKey): the account's, at one
            -- scheme://host:port; other accounts' webhooks there are others.
            s.destination_key AS dest
        FROM webhook_subscriptions s WHERE s.id = w.subscription_id
        OFFSET 0
    ) s
), full_keys AS MATERIALIZED (
    -- Keys whose window is full: a busy webhook's or destination's backlog
    -- there would hide the later deliveries of the key's other webhooks.
    -- Usually none, and then nothing below runs.
    SELECT w.lane_key FROM window_cand w GROUP BY w.lane_key HAVING count(*) >= (SELECT kw.n FROM key_window kw)
), filled AS MATERIALIZED (
    -- Destinations the window already fills to their room (counting only
    -- what their webhooks' rooms let go): the claim could take no more of
    -- them, so the look beside passes over their webhooks without reading
    -- their deliveries, and one account's backlog at a host that takes few
    -- at once hides no other destination of its keys.
    SELECT j.dest FROM judged_window j
    WHERE j.active AND NOT j.deleted AND j.delivery_route = 'shared'
      AND j.wrank <= COALESCE((sqlc.arg(rooms)::jsonb ->> j.subscription_id)::bigint, sqlc.arg(per_webhook)::bigint)
    GROUP BY j.dest
    HAVING count(*) >= COALESCE((sqlc.arg(dest_rooms)::jsonb ->> j.dest)::bigint, sqlc.arg(per_destination)::bigint)
), beside AS (
    -- The other shared webhooks of each full key (by their lane key,
    -- migration 00025; OFFSET 0 keeps the lookup per key, whatever the
    -- plan's estimates) at destinations not filled, each with its oldest
    -- due deliveries (at most per_webhook), read by webhook (the route is
    -- tested as COALESCE so the shard's due index, which would walk the
    -- backlog, cannot serve it); at most a window's worth a key, so a
    -- backlog on every key costs a claim two windows a key, not one per
    -- webhook. The webhooks are read here as they are now, active and
    -- routed 'shared'.
    SELECT b.id, b.subscription_id, b.account_id, b.next_attempt_at, b.run_id, b.event_type, b.created_at, b.dest
    FROM full_keys fk
    CROSS JOIN LATERAL (
        SELECT x.id, x.subscription_id, x.account_id, x.next_attempt_at, x.run_id, x.event_type, x.created_at, s.dest
        FROM (
            -- NOT IN an uncorrelated list is one hash of the window's
            -- webhooks for the statement (a webhook has one lane key, so
            -- the window's other keys never name it); a NOT EXISTS read
            -- the whole window for each webhook of each full key (522 x
            -- 579 rows, 7 ms of a spread burst's claim).
            SELECT s.id, s.destination_key AS dest FROM webhook_subscriptions s
            WHERE s.lane_key = fk.lane_key AND s.delivery_route = 'shared' AND s.active AND s.deleted_at IS NULL
              AND s.id NOT IN (SELECT w.subscription_id FROM window_cand w)
              AND s.destination_key NOT IN (SELECT f.dest FROM filled f)
            OFFSET 0
        ) s
        CROSS JOIN LATERAL (
            SELECT d.id, d.subscription_id, d.account_id, d.next_attempt_at, d.run_id, d.event_type, d.created_at
            FROM webhook_delivery_queue d
            WHERE d.subscription_id = s.id AND d.next_attempt_at <= now()
              AND COALESCE(d.route, '') = 'shared' AND (d.leased_until IS NULL OR d.leased_until <= now())
            ORDER BY d.next_attempt_at
            LIMIT sqlc.arg(per_webhook)::bigint
        ) x
        LIMIT (SELECT kw.n FROM key_window kw)
    ) b
), judged AS (
    SELECT j.id, j.subscription_id, j.account_id, j.next_attempt_at, j.run_id, j.event_type, j.created_at,
        j.active, j.deleted, j.delivery_route, j.dest, j.wrank
    FROM judged_window j
    UNION ALL
    -- A webhook beside is in no window, so its rank is among its own.
    SELECT b.id, b.subscription_id, b.account_id, b.next_attempt_at, b.run_id, b.event_type, b.created_at,
        true, false, 'shared'::text, b.dest,
        row_number() OVER (PARTITION BY b.subscription_id ORDER BY b.next_attempt_at, b.id)
    FROM beside b
), roomed AS (
    -- A webhook gets at most its room: what its in-flight limit lets start
    -- now (rooms, a JSON object by webhook id from the worker's limiter; 0
    -- excludes it), or per_webhook when the worker has nothing in flight
    -- to it. A key lookup per candidate, whatever the plan.
    SELECT j.id, j.subscription_id, j.account_id, j.next_attempt_at, j.run_id, j.event_type, j.created_at, j.dest,
        row_number() OVER (PARTITION BY j.dest ORDER BY j.next_attempt_at, j.id) AS drank
    FROM judged j
    WHERE j.active AND NOT j.deleted AND j.delivery_route = 'shared'
      AND j.wrank <= COALESCE((sqlc.arg(rooms)::jsonb ->> j.subscription_id)::bigint, sqlc.arg(per_webhook)::bigint)
), ranked AS (
    -- A destination gets at most its room likewise (dest_rooms, by
    -- destination key; per_destination when nothing is in flight to it):
    -- an account's webhooks on one host share that host's capacity.
    SELECT r.id, r.subscription_id, r.next_attempt_at, r.run_id, r.event_type, r.created_at,
        row_number() OVER (PARTITION BY r.account_id ORDER BY r.next_attempt_at, r.id) AS arank
    FROM roomed r
    WHERE r.drank <= COALESCE((sqlc.arg(dest_rooms)::jsonb ->> r.dest)::bigint, sqlc.arg(per_destination)::bigint)
), page AS (
    -- The page in turns by account, before per-run order: only its rows
    -- are judged for order (a probe each), however many the candidates.
    SELECT r.id, r.subscription_id, r.next_attempt_at, r.run_id, r.event_type, r.created_at, r.arank
    FROM ranked r
    ORDER BY r.arank, r.next_attempt_at, r.id
    LIMIT sqlc.arg(page_size)::int
), started_here AS (
    -- Runs whose job.run.started is in the page too: their later events
    -- in the page go only after the started has succeeded (activities:
    -- the page's per-run order, which puts the started first).
    SELECT DISTINCT p.subscription_id, p.run_id FROM page p
    WHERE p.event_type = 'job.run.started' AND p.run_id <> ''
), ordered AS (
    SELECT p.id, p.arank, p.next_attempt_at, p.created_at, p.subscription_id, p.run_id,
        b.due AS earlier_due, p.created_at <= now() - sqlc.arg(order_max_wait_ms)::bigint * interval '1 millisecond' AS order_expired,
        (sh.run_id IS NOT NULL AND p.event_type <> 'job.run.started') AS started_here
    FROM page p
    LEFT JOIN started_here sh ON sh.subscription_id = p.subscription_id AND sh.run_id = p.run_id
    -- Per-run order: the run's job.run.started still pending for this
    -- webhook (earlier_due: when it is due next; now while it is in flight).
    LEFT JOIN LATERAL (
        -- In flight (leased): look again in a moment (its record also
        -- releases the run's later events); else when it is due next.
        SELECT min(CASE WHEN q.leased_until > now() THEN now() ELSE q.next_attempt_at END) AS due
        FROM webhook_delivery_queue q
        -- q.run_id <> '' lets the planner use the partial index on
        -- (subscription_id, run_id), not scan the webhook's backlog.
        WHERE p.run_id <> '' AND q.subscription_id = p.subscription_id AND q.run_id = p.run_id
          AND q.run_id <> '' AND q.id <> p.id
          AND q.event_type = 'job.run.started' AND p.event_type <> 'job.run.started'
    ) b ON true
), picked AS (
    -- The page's ids as an array: primary-key lookups (an array of ids is
    -- cheaper to look up by key than any scan of the due rows, however
    -- small the table was when the plan was made; a join with the array
    -- was planned as a scan of every due row).
    -- Here and in changed, the rows are read by primary key, the route
    -- tested as COALESCE(d.route, '') and the due time as
    -- COALESCE(d.next_attempt_at, 'infinity'): no index of the records
    -- serves those tests (the due indexes are the queue's, migration
    -- 00039), and a generic plan made while a partition was new and never
    -- analyzed once scanned a whole due index (15,000 entries a claim on a
    -- 25,000-delivery backlog) to find the page's ids.
    SELECT d.id, d.subscription_id, d.run_id, d.event_type
    FROM webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT o.id FROM ordered o WHERE o.earlier_due IS NULL OR o.order_expired OR o.started_here))
      AND COALESCE(d.route, '') = 'shared' AND COALESCE(d.next_attempt_at, 'infinity') <= now()
      AND (d.leased_until IS NULL OR d.leased_until <= now())
    FOR UPDATE OF d SKIP LOCKED
), taken AS (
    -- Per-run order: an event let through because its run's started is in
    -- the page (started_here) is taken only with that started: SKIP LOCKED
    -- may have passed the started over (a late record, a body being fixed
    -- holds its row), and the event would then go first.
    -- (NOT IN an uncorrelated list is one hash for the statement; a join
    -- with ordered was planned as a nested loop of the two, 200 x 200 rows
    -- and 15 ms of a full page's claim.)
    SELECT pk.id FROM picked pk
    WHERE pk.id NOT IN (SELECT o.id FROM ordered o WHERE o.started_here AND NOT o.order_expired) OR EXISTS (
        SELECT 1 FROM picked st
        WHERE st.subscription_id = pk.subscription_id AND st.run_id = pk.run_id AND st.event_type = 'job.run.started')
), settled AS (
    -- What the claim does to each row it changes, one kind a row (the
    -- kinds' rows are disjoint: the page holds only live, active webhooks
    -- routed 'shared'): 'claimed', a taken delivery (released: let go by
    -- order_max_wait_ms); 'deferred', waiting for an earlier event of its
    -- run, due again when that is (at the earliest in a moment), so no
    -- round takes it before; 'ended', its webhook deactivated or deleted;
    -- 'moved', its webhook routed elsewhere.
    SELECT t.id, 'claimed'::text AS kind, NULL::timestamptz AS due, false AS deleted, ''::text AS route,
        t.id IN (SELECT x.id FROM ordered x WHERE x.earlier_due IS NOT NULL AND x.order_expired) AS released
    FROM taken t
    UNION ALL
    SELECT o.id, 'deferred', LEAST(GREATEST(o.earlier_due, now() + interval '200 milliseconds'),
                                   o.created_at + sqlc.arg(order_max_wait_ms)::bigint * interval '1 millisecond'),
        false, '', false
    FROM ordered o WHERE o.earlier_due IS NOT NULL AND NOT o.order_expired AND NOT o.started_here
    UNION ALL
    SELECT j.id, 'ended', NULL, j.deleted, '', false FROM judged j WHERE j.deleted OR NOT j.active
    UNION ALL
    SELECT j.id, 'moved', NULL, false, j.delivery_route, false FROM judged j
    WHERE j.active AND NOT j.deleted AND j.delivery_route <> 'shared'
), changed AS (
    -- Every change of the claim in one update: each update of the
    -- partitioned records starts a plan node for every partition, whatever
    -- it changes, so one update for the four kinds costs a claim about a
    -- sixth less than an update each (docs/performance.md, "A statement's
    -- fixed cost"). A claimed row is locked already (picked); a deferred
    -- row only while it is due, shared and not leased; an ended one while
    -- it is not final.
    UPDATE webhook_deliveries d
    -- A lost claim's number is reused (claim_reuses_attempt, migration 00030).
    SET attempt_count = CASE WHEN s.kind <> 'claimed' THEN d.attempt_count
                             WHEN claim_reuses_attempt(d.leased_until, d.lost_claims) THEN d.attempt_count
                             ELSE d.attempt_count + 1 END,
        lost_claims = CASE WHEN s.kind <> 'claimed' THEN d.lost_claims
                           WHEN claim_reuses_attempt(d.leased_until, d.lost_claims) THEN d.lost_claims + 1
                           ELSE d.lost_claims END,
        claim_reused = CASE WHEN s.kind = 'claimed' THEN claim_reuses_attempt(d.leased_until, d.lost_claims)
                            ELSE d.claim_reused END,
        leased_until = CASE s.kind WHEN 'claimed' THEN now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond'
                                   WHEN 'ended' THEN NULL ELSE d.leased_until END,
        workflow_id = CASE WHEN s.kind = 'claimed' THEN sqlc.arg(workflow_id) ELSE d.workflow_id END,
        workflow_run_id = CASE WHEN s.kind = 'claimed' THEN webhook_uuid_or_null(sqlc.arg(workflow_run_id)::text)
                               ELSE d.workflow_run_id END,
        order_released_at = CASE WHEN s.released THEN COALESCE(d.order_released_at, now()) ELSE d.order_released_at END,
        next_attempt_at = CASE s.kind WHEN 'deferred' THEN s.due WHEN 'ended' THEN NULL ELSE d.next_attempt_at END,
        status = CASE WHEN s.kind <> 'ended' THEN d.status WHEN s.deleted THEN 'cancelled' ELSE 'skipped' END,
        last_error = CASE WHEN s.kind <> 'ended' THEN d.last_error
                          WHEN s.deleted THEN 'the webhook was deleted' ELSE 'the webhook was inactive' END,
        completed_at = CASE WHEN s.kind = 'ended' THEN now() ELSE d.completed_at END,
        route = CASE WHEN s.kind = 'moved' THEN s.route ELSE d.route END,
        updated_at = CASE WHEN s.kind = 'deferred' THEN d.updated_at ELSE now() END
    FROM settled s
    WHERE d.id = ANY (ARRAY(SELECT x.id FROM settled x)) AND d.id = s.id
      AND CASE s.kind
            WHEN 'deferred' THEN COALESCE(d.next_attempt_at, 'infinity') < 'infinity' AND COALESCE(d.route, '') = 'shared'
                                 AND (d.leased_until IS NULL OR d.leased_until <= now())
            WHEN 'ended' THEN COALESCE(d.next_attempt_at, 'infinity') < 'infinity'
            ELSE true END
    RETURNING s.kind, d.id, d.subscription_id, d.account_id, d.event_id, d.event_type, d.job_id, d.run_id, d.is_test,
        d.attempt_count, d.max_attempts, d.payload, d.body_name, d.next_attempt_at, COALESCE(d.sequence, 0)::bigint AS sequence,
        d.leased_until, d.route
), claimed_events AS MATERIALIZED (
    -- The claimed deliveries' events, read once by an array of their ids:
    -- a key probe of each events partition, whatever the plan's
    -- estimates. Joined on e.id = c.event_id instead, the generic plan
    -- read a partition it had planned while empty (the current one, just
    -- begun) by its whole key for every claimed delivery, until it was
    -- planned again.
    SELECT ev.id, ev.data, ev.tool_name, ev.accepted_at, ev.trace_parent FROM webhook_events ev
    WHERE ev.id = ANY (ARRAY(SELECT x.event_id FROM changed x WHERE x.kind = 'claimed'))
)
SELECT 'claimed'::text AS kind, c.id, c.subscription_id, c.account_id, c.event_id, c.event_type, c.job_id, c.run_id,
    c.is_test, c.attempt_count, c.max_attempts, c.payload, COALESCE(c.body_name, '')::text AS body_name, e.data AS event_data,
    COALESCE(e.tool_name, '')::text AS event_tool_name,
    COALESCE(e.accepted_at, c.next_attempt_at, now())::timestamptz AS event_accepted_at,
    COALESCE(e.trace_parent, ''::bytea)::bytea AS event_trace_parent,
    s.name, s.client_url, s.secret_key_id, s.secret_ciphertext, s.secret_version,
    COALESCE(s.previous_secret_key_id, '')::text AS previous_secret_key_id, s.previous_secret_ciphertext,
    s.previous_secret_expires_at, c.next_attempt_at AS due_at, c.sequence, c.leased_until
FROM changed c
JOIN webhook_subscriptions s ON s.id = c.subscription_id
LEFT JOIN claimed_events e ON e.id = c.event_id
WHERE c.kind = 'claimed'
UNION ALL
SELECT 'ended'::text, en.id, en.subscription_id, en.account_id, '', '', '', '', false, 0, 0, NULL::bytea, '', NULL::bytea,
    '', now(), '', '', '', '', NULL::bytea, 0, '', NULL::bytea, NULL::timestamptz, now(), 0::bigint, NULL::timestamptz
FROM changed en
WHERE en.kind = 'ended'
UNION ALL
SELECT 'moved'::text, m.id, m.subscription_id, m.account_id, '', '', '', '', false, 0, 0, NULL::bytea, '', NULL::bytea,
    '', now(), '', '', '', '', NULL::bytea, 0, '', NULL::bytea, NULL::timestamptz, now(), 0::bigint, NULL::timestamptz
FROM changed m
-- Only those now on their own lane have someone to wake: a paused
-- webhook's deliveries wait for its resume, a held one's for its lane's
-- probe timer.
WHERE m.kind = 'moved' AND m.route = 'own'
UNION ALL
-- One row of kind 'more' when the claim may have left due deliveries
-- behind: candidates a webhook's or destination's room or the page held
-- back, or a key whose window was full (more may wait behind it).
-- Without it the claim took all that was due.
SELECT 'more'::text, '', '', 0, '', '', '', '', false, 0, 0, NULL::bytea, '', NULL::bytea,
    '', now(), '', '', '', '', NULL::bytea, 0, '', NULL::bytea, NULL::timestamptz, now(), 0::bigint, NULL::timestamptz
WHERE EXISTS (SELECT 1 FROM full_keys)
   OR (SELECT count(*) FROM judged j WHERE j.active AND NOT j.deleted AND j.delivery_route = 'shared')
      > (SELECT count(*) FROM page);

-- name: ReleaseClaims :execrows
-- Gives back claimed deliveries whose attempt never started (the round
-- stopped first, it waited too long for its webhook's room, the fence
-- refused it, it follows its run's started and that is to be retried, or
-- a probe's webhook changed): the attempt is not counted (a claim that
-- reused a lost claim's number gives that lost claim back instead) and
-- the lease ends. Only under the lease the claim took (its leased_until,
-- which no other claim of the row can have): a late release never ends a
-- later claim's lease nor uncounts its attempt.
UPDATE webhook_deliveries d
SET attempt_count = d.attempt_count - CASE WHEN d.claim_reused THEN 0 ELSE 1 END,
    lost_claims = d.lost_claims - CASE WHEN d.claim_reused THEN 1 ELSE 0 END,
    -- The lost claim a reused claim took its number from stays lost (an
    -- ended lease): the next claim reuses the number again.
    leased_until = CASE WHEN d.claim_reused THEN now() END, claim_reused = false, updated_at = now()
FROM (SELECT unnest(sqlc.arg(ids)::text[]) AS id, unnest(sqlc.arg(leases)::timestamptz[]) AS leased_until) r
WHERE d.id = r.id AND d.leased_until = r.leased_until AND d.next_attempt_at IS NOT NULL;

-- name: NextDueShared :many
-- When the shard's next delivery is due, in ms from now (negative: overdue;
-- a leased one when its lease ends); no row when it has none pending. Reads
-- the first few of each lane key.
SELECT (EXTRACT(EPOCH FROM (min(GREATEST(n.next_attempt_at, COALESCE(n.leased_until, n.next_attempt_at))) - now())) * 1000)::bigint AS due_in_ms
FROM generate_series(sqlc.arg(lo)::int, sqlc.arg(hi)::int - 1) AS k(lane_key)
CROSS JOIN LATERAL (
    SELECT d.next_attempt_at, d.leased_until FROM webhook_delivery_queue d
    WHERE d.lane_key = k.lane_key AND d.route = 'shared'
    ORDER BY d.next_attempt_at
    LIMIT 8
) n
HAVING count(*) > 0;

-- name: SetWebhookRoute :many
-- Moves webhooks from one route to another (only those on one of
-- from_routes) with their pending deliveries, and says which moved and which
-- of them have deliveries pending. Only the transitions of the table in
-- deliveries/routes.go (Store.SetRoute checks before it runs this); with
-- no_rate_limit (the table's NoRateLimit, e.g. into 'shared'), a webhook
-- with a rate limit stays where it is.
WITH subs AS (
    UPDATE webhook_subscriptions s
    SET delivery_route = sqlc.arg(to_route)::text, route_changed_at = now(), route_reason = sqlc.arg(reason)::text
    WHERE s.id = ANY (sqlc.arg(ids)::text[]) AND s.delivery_route = ANY (sqlc.arg(from_routes)::text[])
      AND s.deleted_at IS NULL
      AND NOT (sqlc.arg(no_rate_limit)::boolean AND EXISTS (
          SELECT 1 FROM webhook_delivery_settings ds
          WHERE ds.subscription_id = s.id AND ds.max_requests_per_second IS NOT NULL))
    RETURNING s.id, s.account_id, s.lane_key
), dels AS (
    -- The pending deliveries found in the queue, each taken by primary key.
    UPDATE webhook_deliveries d
    SET route = sqlc.arg(to_route)::text
    WHERE d.id = ANY (ARRAY(SELECT q.id FROM webhook_delivery_queue q JOIN subs ON q.subscription_id = subs.id))
      AND d.next_attempt_at IS NOT NULL
    RETURNING d.subscription_id
)
SELECT subs.id, subs.account_id, subs.lane_key::int AS lane_key,
    EXISTS (SELECT 1 FROM dels WHERE dels.subscription_id = subs.id)::boolean AS has_pending
FROM subs;

-- name: LockWebhookRoutes :exec
-- Locks webhooks' rows, in id order, before a route change in the same
-- transaction: the change's next statement then sees a rate limit that a
-- settings write committed meanwhile (no_rate_limit), and a settings write
-- that sets one waits for the change and moves the webhook after it. FOR
-- NO KEY UPDATE: what the change's UPDATE takes anyway; new deliveries
-- (their foreign key) do not wait for it.
SELECT s.id FROM webhook_subscriptions s
WHERE s.id = ANY (sqlc.arg(ids)::text[])
ORDER BY s.id
FOR NO KEY UPDATE;

-- name: WebhookRoute :one
-- A webhook's route, why and since when (empty reason: never changed).
SELECT id, account_id, delivery_route, route_reason, route_changed_at, active, (deleted_at IS NOT NULL)::boolean AS deleted,
    lane_key::int AS lane_key
FROM webhook_subscriptions
WHERE id = sqlc.arg(id);

-- name: OverdueRoutes :many
-- What the sweeper wakes: webhooks with a delivery overdue by more than
-- the grace, with the route that takes it (a shard's by its lane key; a
-- webhook's own lane). Paused webhooks are left alone, and so are held
-- ones (their lanes wait for the next probe: OverdueProbes).
SELECT d.subscription_id, d.account_id, d.route, d.lane_key::int AS lane_key
FROM webhook_delivery_queue d
WHERE d.route NOT IN ('paused', 'held')
  AND d.next_attempt_at < now() - sqlc.arg(grace_ms)::bigint * interval '1 millisecond'
  AND (d.leased_until IS NULL OR d.leased_until < now() - sqlc.arg(grace_ms)::bigint * interval '1 millisecond')
GROUP BY d.subscription_id, d.account_id, d.route, d.lane_key
LIMIT sqlc.arg(max_webhooks);

-- name: AttemptOutcomes :many
-- The recorded outcomes of attempts handed over by a round (its patience
-- ended first), for the shard's next round to report in its history.
-- The delivery's status after that attempt: succeeded for a success,
-- retrying when a later attempt was made, else its status now.
SELECT a.delivery_id, a.attempt_number, a.status_code, a.error_kind, a.error_message, a.duration_ms,
    (CASE WHEN a.error_kind = '' THEN 'succeeded'
          WHEN d.attempt_count > a.attempt_number THEN 'retrying'
          ELSE d.status END)::text AS status,
    (CASE WHEN d.attempt_count > a.attempt_number THEN 0 ELSE COALESCE(d.retry_delay_ms, 0) END)::bigint AS retry_delay_ms
FROM webhook_delivery_attempts a
JOIN webhook_deliveries d ON d.id = a.delivery_id
-- Both by the array of the ids too: a key probe of each partition in any
-- plan (docs/performance.md, "Planning").
WHERE a.delivery_id = ANY (sqlc.arg(delivery_ids)::text[]) AND d.id = ANY (sqlc.arg(delivery_ids)::text[])
  AND (a.delivery_id, a.attempt_number) IN (
    SELECT unnest(sqlc.arg(delivery_ids)::text[]), unnest(sqlc.arg(attempt_numbers)::int[])
);

-- name: PromiseShardClaims :exec
-- The shard's round claims until for_ms from now (shard_claim_promises).
INSERT INTO shard_claim_promises (shards, shard, claims_until)
VALUES (sqlc.arg(shards)::int, sqlc.arg(shard)::int, now() + sqlc.arg(for_ms)::bigint * interval '1 millisecond')
ON CONFLICT (shards, shard) DO UPDATE SET claims_until = EXCLUDED.claims_until;

-- name: BeginShardRound :exec
-- A round of the shard begins, before its first claim: one more in its
-- count of rounds begun (migration 00042; a row made here promises
-- nothing).
INSERT INTO shard_claim_promises (shards, shard, claims_until, rounds_begun)
VALUES (sqlc.arg(shards)::int, sqlc.arg(shard)::int, '-infinity', 1)
ON CONFLICT (shards, shard) DO UPDATE SET rounds_begun = shard_claim_promises.rounds_begun + 1;

-- name: ShardRoundsBegun :one
-- How many rounds the shard has begun (0 before its first).
SELECT COALESCE((SELECT p.rounds_begun FROM shard_claim_promises p
                 WHERE p.shards = sqlc.arg(shards)::int AND p.shard = sqlc.arg(shard)::int), 0)::bigint AS rounds_begun;

-- name: ShardClaimPromises :many
-- How long each shard's round still promises to claim, in microseconds
-- from this statement's start; shards without a promise are left out.
SELECT shard, (EXTRACT(EPOCH FROM (claims_until - statement_timestamp())) * 1000000)::bigint AS remaining_us
FROM shard_claim_promises
WHERE shards = sqlc.arg(shards)::int AND claims_until > statement_timestamp();
