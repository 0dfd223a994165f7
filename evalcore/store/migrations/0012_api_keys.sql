-- 0012_api_keys: the keys machines present to the HTTP API (/api/v1). The key itself is never
-- stored: only the hex SHA-256 of it (a key is 32 random bytes, so a plain hash is enough), its
-- name, scopes, who created it, when, when it was last used (to the minute) and when it was
-- revoked. A revoked key stays listed. The one writer of this table is evalcore.store.keys.

CREATE TABLE api_keys (
    key_id        VARCHAR PRIMARY KEY,   -- 12 hex digits, not secret
    name          VARCHAR NOT NULL,      -- at most one unrevoked key per name
    key_hash      VARCHAR NOT NULL UNIQUE,  -- hex SHA-256 of the whole key (evk_...)
    scopes        VARCHAR NOT NULL,      -- comma-separated, from read, runs:write, evaluate, gate, deploy, traffic:write
    author        VARCHAR,               -- evalcore.authors (NULL: not recorded)
    created_at    TIMESTAMP NOT NULL,
    last_used_at  TIMESTAMP,             -- recorded at most once a minute per key
    revoked_at    TIMESTAMP              -- NULL: the key works
);
