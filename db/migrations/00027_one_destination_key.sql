-- +goose Up
-- One normalisation of a destination, the worker's limiter's
-- (inflight.Destination): scheme and host lowercased, user info dropped,
-- the scheme's default port made explicit, so "https://h" and
-- "https://h:443" are one destination for the claim as for the limiter
-- (migration 00024 kept the port as written).
CREATE FUNCTION webhook_destination(client_url TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN m IS NULL THEN client_url
        ELSE lower(m[1]) || '://' || lower(m[2]) || ':' ||
            COALESCE(NULLIF(m[3], ''), CASE lower(m[1]) WHEN 'https' THEN '443' WHEN 'http' THEN '80' ELSE '' END)
        END
    FROM (SELECT regexp_match(client_url, '^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^/?#@]*@)?(\[[^]/?#]*\]|[^/?#:]*)(?::([0-9]*))?(?:[/?#]|$)') AS m) x
$$;

ALTER TABLE webhook_subscriptions DROP COLUMN destination_key;
ALTER TABLE webhook_subscriptions ADD COLUMN destination_key TEXT NOT NULL
    GENERATED ALWAYS AS (account_id::text || ' ' || webhook_destination(client_url)) STORED;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN destination_key;
ALTER TABLE webhook_subscriptions ADD COLUMN destination_key TEXT NOT NULL
    GENERATED ALWAYS AS (account_id::text || ' ' ||
        COALESCE(lower(substring(client_url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')), '')) STORED;
DROP FUNCTION webhook_destination(TEXT);
