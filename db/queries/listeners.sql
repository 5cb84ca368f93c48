-- Queries of listeners (webhooks listen): a webhook whose deliveries the
-- API relays to a long-polling CLI, handed over between API processes
-- through webhook_listener_attempts and NOTIFY webhook_listeners.

-- name: GetListenerByName :one
-- The account's listener of that name, with its webhook as it is now
-- (webhook_live false: deleted) and the webhook's sealed secret.
SELECT l.id, l.subscription_id, l.relay_token_hash, l.created_at,
    (s.deleted_at IS NULL)::boolean AS webhook_live, s.client_url, s.secret_key_id, s.secret_ciphertext
FROM webhook_listeners l
JOIN webhook_subscriptions s ON s.id = l.subscription_id
WHERE l.account_id = sqlc.arg(account_id) AND l.name = sqlc.arg(name);

-- name: SaveListener :one
-- Creates the account's listener of that name, or points it at a new
-- webhook and token, but only while it still points at
-- expected_subscription_id: of two `listen`s racing to replace its
-- webhook, one wins and the other gets no row (and reads again).
INSERT INTO webhook_listeners (id, account_id, name, subscription_id, relay_token_hash)
VALUES (sqlc.arg(id), sqlc.arg(account_id), sqlc.arg(name), sqlc.arg(subscription_id), sqlc.arg(relay_token_hash))
ON CONFLICT (account_id, name) DO UPDATE
    SET subscription_id = EXCLUDED.subscription_id, relay_token_hash = EXCLUDED.relay_token_hash
    WHERE webhook_listeners.subscription_id = sqlc.arg(expected_subscription_id)
RETURNING id, created_at;

-- name: GetListener :one
-- One listener of the account whose webhook is live.
SELECT l.id, l.name, l.subscription_id, l.created_at
FROM webhook_listeners l
JOIN webhook_subscriptions s ON s.id = l.subscription_id AND s.deleted_at IS NULL
WHERE l.id = sqlc.arg(id) AND l.account_id = sqlc.arg(account_id);

-- name: GetListenerByRelayToken :one
-- The listener a relay request is addressed to, with what verifies the
-- request (its live webhook's secrets) and whether a `listen` takes its
-- deliveries: one of its polls is open, or answered moments ago (the CLI
-- is about to poll again).
SELECT l.id, l.account_id, l.subscription_id,
    EXISTS (SELECT 1 FROM webhook_listener_polls p WHERE p.listener_id = l.id AND p.polling_until > now())::boolean AS polling,
    s.secret_key_id, s.secret_ciphertext,
    s.previous_secret_key_id, s.previous_secret_ciphertext, s.previous_secret_expires_at
FROM webhook_listeners l
JOIN webhook_subscriptions s ON s.id = l.subscription_id AND s.deleted_at IS NULL
WHERE l.relay_token_hash = sqlc.arg(relay_token_hash);

-- name: LockListenerAccount :exec
-- Serialises the bounded starts (polls, held attempts) of one account's
-- listeners, so concurrent starts cannot pass a bound together. Held to
-- the end of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended('webhook_listeners/' || sqlc.arg(account_id)::bigint::text, 0));

-- name: StartListenerPoll :one
-- Opens a long poll of the listener, polled until polling_until, unless
-- the listener or its account has as many polls open as it may: no row.
-- Run under LockListenerAccount.
INSERT INTO webhook_listener_polls (listener_id, account_id, polling_until)
SELECT sqlc.arg(listener_id), sqlc.arg(account_id), now() + make_interval(secs => sqlc.arg(seconds)::float8)
WHERE (SELECT count(*) FROM webhook_listener_polls p
       WHERE p.listener_id = sqlc.arg(listener_id) AND p.ended_at IS NULL AND p.polling_until > now()) < sqlc.arg(max_per_listener)::int
  AND (SELECT count(*) FROM webhook_listener_polls p
       WHERE p.account_id = sqlc.arg(account_id) AND p.ended_at IS NULL AND p.polling_until > now()) < sqlc.arg(max_per_account)::int
RETURNING id;

-- name: EndListenerPoll :exec
-- The poll answered: the listener stays polled for grace_seconds, the time
-- its CLI takes to poll again.
UPDATE webhook_listener_polls
SET ended_at = now(), polling_until = LEAST(polling_until, now() + make_interval(secs => sqlc.arg(grace_seconds)::float8))
WHERE id = sqlc.arg(id);

-- name: DeleteListenerPoll :exec
-- The poll's client went away: it counts no longer.
DELETE FROM webhook_listener_polls WHERE id = sqlc.arg(id);

-- name: RecordRelayedRequest :one
-- Takes a signed relay request once: no row when the same request (its
-- webhook-id and webhook-timestamp) was taken already.
INSERT INTO webhook_listener_relayed (listener_id, request_hash, forget_after)
VALUES (sqlc.arg(listener_id), sqlc.arg(request_hash), sqlc.arg(forget_after))
ON CONFLICT DO NOTHING
RETURNING listener_id;

-- name: CountHeldListenerAttempts :one
-- The attempts the relay holds for the account's listeners (waiting for an
-- answer). Run under LockListenerAccount.
SELECT count(*)::int FROM webhook_listener_attempts a
JOIN webhook_listeners l ON l.id = a.listener_id
WHERE l.account_id = sqlc.arg(account_id)
  AND a.answered_at IS NULL AND a.closed_at IS NULL AND a.answer_by > now();

-- name: EnqueueListenerAttempt :one
INSERT INTO webhook_listener_attempts (id, listener_id, delivery_id, event_type, attempt, headers_key_id, headers_ciphertext, body, answer_by)
VALUES (sqlc.arg(id), sqlc.arg(listener_id), sqlc.arg(delivery_id), sqlc.arg(event_type), sqlc.arg(attempt),
    sqlc.arg(headers_key_id), sqlc.arg(headers_ciphertext), sqlc.arg(body),
    now() + make_interval(secs => sqlc.arg(hold_seconds)::float8))
RETURNING answer_by;

-- name: ClaimListenerAttempt :one
-- Hands the listener's oldest waiting attempt to one poll.
UPDATE webhook_listener_attempts SET claimed_at = now()
WHERE id = (
    SELECT w.id FROM webhook_listener_attempts w
    WHERE w.listener_id = sqlc.arg(listener_id) AND w.claimed_at IS NULL AND w.closed_at IS NULL AND w.answer_by > now()
    ORDER BY w.created_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING id, delivery_id, event_type, attempt, headers_key_id, headers_ciphertext, body, answer_by;

-- name: AnswerListenerAttempt :one
-- Records the local endpoint's answer to a claimed attempt whose holder
-- still waits. No row: unknown, not claimed, already answered or too late.
UPDATE webhook_listener_attempts
SET answered_at = now(), status_code = sqlc.narg(status_code), answer_headers = sqlc.narg(answer_headers),
    answer_body = sqlc.narg(answer_body), answer_error = sqlc.narg(answer_error), answer_ms = sqlc.arg(answer_ms)
WHERE id = sqlc.arg(id) AND listener_id = sqlc.arg(listener_id)
  AND claimed_at IS NOT NULL AND answered_at IS NULL AND closed_at IS NULL
RETURNING id;

-- name: ListenerAttemptExists :one
SELECT EXISTS (SELECT 1 FROM webhook_listener_attempts WHERE id = sqlc.arg(id) AND listener_id = sqlc.arg(listener_id));

-- name: GetListenerAttemptAnswer :one
-- What the holder of an attempt waits for.
SELECT claimed_at, answered_at, status_code, answer_headers, answer_body, answer_error, answer_ms
FROM webhook_listener_attempts WHERE id = sqlc.arg(id);

-- name: CloseListenerAttempt :one
-- The holder stops waiting; an answer after this is too late. No row: it
-- was answered first.
UPDATE webhook_listener_attempts SET closed_at = now()
WHERE id = sqlc.arg(id) AND answered_at IS NULL AND closed_at IS NULL
RETURNING claimed_at;

-- name: DeleteOldListenerAttempts :execrows
DELETE FROM webhook_listener_attempts WHERE answer_by < now() - make_interval(secs => sqlc.arg(older_than_seconds)::float8);

-- name: DeleteOldListenerPolls :execrows
-- Polls that count no longer (ended, or of a process that died).
DELETE FROM webhook_listener_polls WHERE polling_until < now() - interval '1 minute';

-- name: DeleteOldRelayedRequests :execrows
-- Requests whose timestamp the relay refuses by now anyway.
DELETE FROM webhook_listener_relayed WHERE forget_after < now();

-- name: NotifyListeners :exec
-- Wakes the API processes that wait on webhook_listeners: payload
-- "l:{listener id}" for a new attempt, "a:{attempt id}" for an answer.
SELECT pg_notify('webhook_listeners', sqlc.arg(payload)::text);

-- name: ListenForListeners :exec
LISTEN webhook_listeners;
