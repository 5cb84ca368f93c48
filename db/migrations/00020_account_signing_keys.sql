-- +goose Up
-- Each account's Ed25519 signing keys (signingkeys): the current key, made
-- on first use, and after a rotation the previous one, which signs beside
-- it until valid_until. The private key is stored only sealed with
-- SECRET_ENCRYPTION_KEYS, bound to the account and key id.
CREATE TABLE account_signing_keys (
    id                     TEXT        PRIMARY KEY,  -- kid: the JWK thumbprint (RFC 7638) of the public key
    account_id             BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    public_key             BYTEA       NOT NULL,
    private_key_key_id     TEXT        NOT NULL,
    private_key_ciphertext BYTEA       NOT NULL,
    valid_from             TIMESTAMPTZ NOT NULL,
    valid_until            TIMESTAMPTZ,              -- NULL: the current key
    CONSTRAINT account_signing_keys_public_key_size CHECK (octet_length(public_key) = 32),
    CONSTRAINT account_signing_keys_validity CHECK (valid_until IS NULL OR valid_until >= valid_from)
);

-- One current key per account: concurrent first uses make one.
CREATE UNIQUE INDEX account_signing_keys_current ON account_signing_keys (account_id) WHERE valid_until IS NULL;
CREATE INDEX account_signing_keys_account ON account_signing_keys (account_id, valid_from);

-- +goose Down
DROP TABLE account_signing_keys;
