-- 0005_external: runs made elsewhere (imported rankings, live search endpoints, a Python
-- retriever function) and several embedding models in one run.

-- What each configuration (strategy x retriever) of a run is. Built-in configurations gate on
-- the cosine distance of their hits; external ones on the retriever's own score, read in its
-- direction (similarity: higher = closer, kept when score >= t; distance: kept when score < t).
CREATE TABLE configurations (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    source            VARCHAR NOT NULL,          -- builtin | import | endpoint | python
    score_kind        VARCHAR NOT NULL,          -- similarity | distance: how hits.score reads
    gate_on           VARCHAR NOT NULL,          -- distance (hits.distance) | score (hits.score)
    model             VARCHAR,                   -- embedding model (built-in configurations)
    chunker           VARCHAR,                   -- chunking strategy or the external chunker's name
    detail            VARCHAR,                   -- JSON: rankings file and format, URL, mapping
    PRIMARY KEY (run_id, strategy, retriever)
);
INSERT INTO configurations
    SELECT DISTINCT r.run_id, r.strategy, r.retriever, 'builtin', 'similarity', 'distance', u.model,
           r.strategy, NULL
    FROM results r JOIN runs u ON u.run_id = r.run_id;

-- Queries a configuration could not answer (the endpoint call or the Python retriever failed):
-- kept with the reason, never scored as misses; such a query has no results and no hits row.
CREATE TABLE failures (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    query_id          VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,          -- in | out
    reason            VARCHAR NOT NULL,
    attempts          INTEGER,                   -- requests sent (retries included)
    PRIMARY KEY (run_id, strategy, retriever, query_id)
);

-- External hits have no cosine distance: the gate reads their own score.
ALTER TABLE hits ALTER COLUMN distance DROP NOT NULL;
-- The retriever's own score of the best-ranked correct hit and of the rank-1 hit
-- (filled for configurations that gate on the score).
ALTER TABLE results ADD COLUMN answer_score DOUBLE;
ALTER TABLE results ADD COLUMN top_score DOUBLE;

-- Imported chunks keep their own id; one that cannot be located in its document keeps the
-- reason in `problem`, has no offsets and is never correct.
ALTER TABLE chunks ADD COLUMN external_id VARCHAR;
ALTER TABLE chunks ADD COLUMN problem VARCHAR;
ALTER TABLE chunks ALTER COLUMN start DROP NOT NULL;
ALTER TABLE chunks ALTER COLUMN "end" DROP NOT NULL;
ALTER TABLE chunks ALTER COLUMN evidence_start DROP NOT NULL;
ALTER TABLE chunks ALTER COLUMN pieces DROP NOT NULL;          -- not embedded here: unknown
ALTER TABLE chunks ALTER COLUMN header_pieces DROP NOT NULL;

-- A stored strategy is one chunker under one model ("E", or "E@minilm" when a run embeds with
-- several models). External strategies have no recipe and no word pieces; their destroyed
-- count is unknown (NULL) when the full chunk set was not given (a live endpoint).
ALTER TABLE strategies ADD COLUMN chunker VARCHAR;
ALTER TABLE strategies ADD COLUMN model VARCHAR;
ALTER TABLE strategies ADD COLUMN unlocated INTEGER;           -- chunks that could not be located
ALTER TABLE strategies ALTER COLUMN size DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN overlap DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN boundaries DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN header DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN pieces DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN header_pieces DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN over_window DROP NOT NULL;
ALTER TABLE strategies ALTER COLUMN destroyed DROP NOT NULL;
UPDATE strategies SET chunker = strategy, model = (SELECT u.model FROM runs u WHERE u.run_id = strategies.run_id);

-- Responses of live search endpoints, shared by every run: keyed by method, URL and request
-- body (never by headers: credentials are not stored). Only answers with an HTTP 2xx status
-- are kept, malformed ones included, so a re-run sends nothing unless asked to.
CREATE TABLE responses (
    key               VARCHAR PRIMARY KEY,       -- sha256 of method, URL and body
    method            VARCHAR NOT NULL,
    url               VARCHAR NOT NULL,
    body              VARCHAR,
    status            INTEGER NOT NULL,
    response          VARCHAR NOT NULL,          -- the body as received (UTF-8 text)
    seconds           DOUBLE,                    -- how long the answer took
    created_at        TIMESTAMP NOT NULL
);
