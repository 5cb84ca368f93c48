-- +goose Up
-- A webhook's delivery settings, beside its subscription row (which keeps
-- exactly the spec's fields): a rate limit, custom headers and a client
-- certificate for mutual TLS. No row means the defaults (no limit, no
-- headers, no certificate).
--
-- headers is a JSON array of at most 20 objects, in the order they were
-- given: {"name": "...", "secret": false, "value": "..."} or, for a secret
-- value, {"name": "...", "secret": true, "key_id": "...", "ciphertext":
-- "<base64>"}, the value sealed like hmac_secret (AES-256-GCM, additional
-- data "{subscription_id}/header/{lower-case name}"). The client
-- certificate's private key is sealed the same way (additional data
-- "{subscription_id}/client-key"); the certificate itself is public.
CREATE TABLE webhook_delivery_settings (
    subscription_id         TEXT        PRIMARY KEY REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    account_id              BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- NULL: no limit. Enforced by the delivery scheduler.
    max_requests_per_second DOUBLE PRECISION,
    headers                 JSONB       NOT NULL DEFAULT '[]',
    -- PEM: the leaf first, then any intermediates.
    client_certificate_pem  TEXT,
    -- Hex SHA-256 of the leaf's DER: the sender's cache key.
    client_certificate_sha256 TEXT,
    client_key_key_id       TEXT,
    client_key_ciphertext   BYTEA,
    created_at              TIMESTAMPTZ NOT NULL,
    updated_at              TIMESTAMPTZ NOT NULL,
    -- Defence in depth: the API validates all of this first, with clear errors.
    CONSTRAINT webhook_delivery_settings_rate CHECK (
        max_requests_per_second IS NULL OR (max_requests_per_second > 0 AND max_requests_per_second <= 1000)),
    CONSTRAINT webhook_delivery_settings_headers CHECK (
        jsonb_typeof(headers) = 'array' AND jsonb_array_length(headers) <= 20),
    CONSTRAINT webhook_delivery_settings_certificate_whole CHECK (
        (client_certificate_pem IS NULL) = (client_certificate_sha256 IS NULL)
        AND (client_certificate_pem IS NULL) = (client_key_key_id IS NULL)
        AND (client_certificate_pem IS NULL) = (client_key_ciphertext IS NULL))
);

-- +goose Down
DROP TABLE webhook_delivery_settings;
