-- +goose Up
CREATE TABLE accounts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    identifier  TEXT        NOT NULL UNIQUE,
    name        TEXT        NOT NULL,
    plan        TEXT        NOT NULL CHECK (plan IN ('developer', 'team', 'enterprise')),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email       TEXT        NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    account_id      BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id         BIGINT      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    license         TEXT        NOT NULL,
    permission_sets TEXT[]      NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user_id_idx ON memberships (user_id);

-- One current personal API key per user, stored as SHA-256 of the token.
CREATE TABLE user_api_keys (
    user_id     BIGINT      PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    key_hash    BYTEA       NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE service_tokens (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id      BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name            TEXT        NOT NULL,
    token_hash      BYTEA       NOT NULL UNIQUE,
    permission_sets TEXT[]      NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE service_tokens;
DROP TABLE user_api_keys;
DROP TABLE memberships;
DROP TABLE users;
DROP TABLE accounts;
