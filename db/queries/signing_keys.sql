-- Accounts' Ed25519 signing keys (signingkeys).

-- name: SigningKeysValidAt :many
-- An account's keys that sign at valid_at: the current one first, then
-- any whose overlap has not ended, newest first.
SELECT id, public_key, private_key_key_id, private_key_ciphertext, valid_from, valid_until
FROM account_signing_keys
WHERE account_id = sqlc.arg(account_id)
  AND (valid_until IS NULL OR valid_until > sqlc.arg(valid_at)::timestamptz)
ORDER BY valid_until IS NULL DESC, valid_from DESC, id;

-- name: LockAccountForSigningKeys :one
-- Locks an account while its keys are made or rotated, so first uses and
-- rotations of one account run one after another. NO KEY UPDATE does not
-- hold back rows that reference the account.
SELECT id FROM accounts WHERE id = sqlc.arg(account_id) FOR NO KEY UPDATE;

-- name: HasCurrentSigningKey :one
SELECT EXISTS (
    SELECT 1 FROM account_signing_keys WHERE account_id = sqlc.arg(account_id) AND valid_until IS NULL
) AS has;

-- name: DeleteRetiredSigningKeys :exec
-- A rotation ends any earlier overlap: every key but the current one goes.
DELETE FROM account_signing_keys
WHERE account_id = sqlc.arg(account_id) AND valid_until IS NOT NULL;

-- name: RetireCurrentSigningKey :exec
UPDATE account_signing_keys
SET valid_until = sqlc.arg(valid_until)
WHERE account_id = sqlc.arg(account_id) AND valid_until IS NULL;

-- name: InsertSigningKey :exec
INSERT INTO account_signing_keys (id, account_id, public_key, private_key_key_id, private_key_ciphertext, valid_from)
VALUES (sqlc.arg(id), sqlc.arg(account_id), sqlc.arg(public_key), sqlc.arg(private_key_key_id),
        sqlc.arg(private_key_ciphertext), sqlc.arg(valid_from));

-- name: SigningKeysNotSealedWith :many
-- SECRET_ENCRYPTION_KEYS rotation: keys whose private key is sealed with
-- another key than key_id, in id order after after_id.
SELECT id FROM account_signing_keys
WHERE id > sqlc.arg(after_id) AND private_key_key_id <> sqlc.arg(key_id)::text
ORDER BY id
LIMIT sqlc.arg(batch_size)::int;

-- name: LockSigningKeyForReseal :one
SELECT account_id, private_key_key_id, private_key_ciphertext
FROM account_signing_keys
WHERE id = sqlc.arg(id)
FOR UPDATE;

-- name: ResealSigningKey :exec
-- The private key itself does not change.
UPDATE account_signing_keys
SET private_key_key_id = sqlc.arg(private_key_key_id), private_key_ciphertext = sqlc.arg(private_key_ciphertext)
WHERE id = sqlc.arg(id);
