-- 0003_identity: marks the file as an evalcore run store (DuckDB has no application id).
-- evalcore opens for writing only a file whose schema_migrations names its own migrations
-- (or that holds this marker); any other DuckDB file is refused untouched.

CREATE TABLE evalcore_store (
    application       VARCHAR NOT NULL,          -- always 'evalcore'
    created_at        TIMESTAMP NOT NULL         -- when the marker was written
);

INSERT INTO evalcore_store VALUES ('evalcore', current_timestamp::TIMESTAMP);
