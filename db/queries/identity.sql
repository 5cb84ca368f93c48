-- name: CreateAccount :one
INSERT INTO accounts (identifier, name, plan)
VALUES ($1, $2, $3)
RETURNING *;

-- name: GetAccount :one
SELECT * FROM accounts WHERE id = $1;

-- name: CreateUser :one
INSERT INTO users (email) VALUES ($1) RETURNING *;

-- name: AddMembership :exec
INSERT INTO memberships (account_id, user_id, license, permission_sets)
VALUES ($1, $2, $3, $4);

-- name: SetUserAPIKey :exec
INSERT INTO user_api_keys (user_id, key_hash) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET key_hash = EXCLUDED.key_hash, created_at = now();

-- name: RotateUserAPIKey :one
-- Replaces the key only if the caller still holds the current one, so of
-- concurrent rotations with one key exactly one wins.
UPDATE user_api_keys
SET key_hash = sqlc.arg(new_hash), created_at = now()
WHERE user_id = sqlc.arg(user_id) AND key_hash = sqlc.arg(old_hash)
RETURNING created_at;

-- name: UserByAPIKeyHash :one
SELECT k.user_id, u.email
FROM user_api_keys k JOIN users u ON u.id = k.user_id
WHERE k.key_hash = $1;

-- name: UserMemberships :many
SELECT a.id, a.identifier, a.name, a.plan, m.license, m.permission_sets
FROM memberships m JOIN accounts a ON a.id = m.account_id
WHERE m.user_id = $1
ORDER BY a.id;

-- name: CreateServiceToken :one
INSERT INTO service_tokens (account_id, name, token_hash, permission_sets)
VALUES ($1, $2, $3, $4)
RETURNING id;

-- name: ServiceTokenByHash :one
SELECT t.id, t.name AS token_name, t.permission_sets, a.id AS account_id, a.identifier, a.name, a.plan
FROM service_tokens t JOIN accounts a ON a.id = t.account_id
WHERE t.token_hash = $1;

-- name: AccountByName :one
SELECT * FROM accounts WHERE name = $1 ORDER BY id LIMIT 1;
