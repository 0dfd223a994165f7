-- 0007_traffic: production queries replayed against one configuration of a run (evalcore.traffic).
-- Query texts may hold personal data: they live only in traffic_texts, and `traffic forget`
-- deletes them for real (rows removed, the file rewritten so no free page keeps them).

-- One import of a log file (only imports that added lines are recorded).
CREATE TABLE traffic_imports (
    import_id         VARCHAR PRIMARY KEY,
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    source            VARCHAR NOT NULL,          -- the log's file name (never its folder)
    format            VARCHAR NOT NULL,          -- csv | jsonl | parquet
    author            VARCHAR,                   -- who imported (evalcore.authors)
    status            VARCHAR NOT NULL,          -- running | complete | failed
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    lines             BIGINT,                    -- log lines read
    added             BIGINT,                    -- lines stored by this import
    already           BIGINT,                    -- lines stored before (a re-import adds nothing)
    problems          BIGINT,                    -- lines not usable (no query, bad time, not UTF-8)
    new_texts         BIGINT,                    -- distinct texts scored by this import
    problem_lines     VARCHAR                    -- JSON: the first 20 problems, with line numbers
);

-- One row per distinct query text and configuration: scored once, however often it was asked.
CREATE TABLE traffic_texts (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    text_hash         VARCHAR NOT NULL,          -- the embedding cache's text hash
    text              VARCHAR NOT NULL,
    gate_value        DOUBLE,                    -- smallest distance (or best own score) among the top 4
    failure           VARCHAR,                   -- an endpoint that could not answer it: why (never a miss)
    PRIMARY KEY (run_id, strategy, retriever, text_hash)
);

-- The top hits of each distinct text, exactly as the run's retriever ranks them.
CREATE TABLE traffic_hits (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    text_hash         VARCHAR NOT NULL,
    rank              INTEGER NOT NULL,          -- 1-based
    chunk_id          INTEGER NOT NULL,          -- -1: an endpoint's chunk the run never saw
    distance          DOUBLE,
    score             DOUBLE,
    PRIMARY KEY (run_id, strategy, retriever, text_hash, rank)
);

-- One row per usable log line (duplicates included). A line's identity is a hash of its time,
-- text and label plus its occurrence number in the log, so a re-import adds nothing.
CREATE TABLE traffic_queries (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    line_key          BIGINT NOT NULL,
    occurrence        INTEGER NOT NULL,
    import_id         VARCHAR NOT NULL,
    line              BIGINT NOT NULL,           -- line (csv, jsonl) or row (parquet) in its log, 1-based
    asked_at          TIMESTAMP NOT NULL,        -- UTC
    text_hash         VARCHAR NOT NULL,
    label             VARCHAR,                   -- answerable | off-topic | NULL (from the log)
    PRIMARY KEY (run_id, strategy, retriever, line_key, occurrence)
);

-- Labels given later (on the Traffic screen) to a distinct text; a label in the log wins.
CREATE TABLE traffic_labels (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    text_hash         VARCHAR NOT NULL,
    label             VARCHAR NOT NULL,          -- answerable | off-topic
    author            VARCHAR,
    labelled_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, strategy, retriever, text_hash)
);
