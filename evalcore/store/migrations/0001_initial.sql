-- 0001_initial: the run store. Offsets are code points into documents.text, half-open.

CREATE TABLE runs (
    run_id            VARCHAR PRIMARY KEY,
    name              VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,          -- running | complete | failed | cancelled
    reason            VARCHAR,                   -- why failed / cancelled
    stage             VARCHAR,                   -- current stage while running
    progress          DOUBLE,                    -- 0..1 while running
    created_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    pid               INTEGER,
    host              VARCHAR,
    corpus_root       VARCHAR,
    corpus_fingerprint VARCHAR,
    questions_path    VARCHAR,
    ood_path          VARCHAR,
    model             VARCHAR,
    model_dim         INTEGER,
    pipeline_version  VARCHAR,
    strategies        VARCHAR,                   -- comma list, e.g. A,B,C
    retrievers        VARCHAR,                   -- comma list, e.g. dense,bm25,hybrid
    rerank_note       VARCHAR,                   -- why rerank was not run, or the model used
    new_embeddings    INTEGER,
    cached_embeddings INTEGER,
    settings          VARCHAR                    -- JSON: sizes, k list, seed, versions
);

CREATE TABLE documents (
    run_id            VARCHAR NOT NULL,
    doc_id            VARCHAR NOT NULL,
    title             VARCHAR,
    source_type       VARCHAR,
    path              VARCHAR,
    state             VARCHAR NOT NULL,          -- indexed | failed
    reason            VARCHAR,
    extractor         VARCHAR,
    extractor_version VARCHAR,
    model             VARCHAR,
    model_dim         INTEGER,
    pipeline_version  VARCHAR,
    characters        INTEGER,
    sections          INTEGER,
    text              VARCHAR,                   -- canonical text; every locator slices it
    PRIMARY KEY (run_id, doc_id)
);

CREATE TABLE strategies (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    size              INTEGER NOT NULL,
    overlap           INTEGER NOT NULL,
    boundaries        BOOLEAN NOT NULL,
    header            BOOLEAN NOT NULL,
    chunks            INTEGER NOT NULL,
    pieces            BIGINT NOT NULL,           -- embedded word pieces in total
    header_pieces     BIGINT NOT NULL,
    over_window       INTEGER NOT NULL,          -- chunks over the 256-piece window
    destroyed         INTEGER NOT NULL,          -- destroyed ground truths
    norm_max_diff     DOUBLE,                    -- max |L2^2/2 - (1 - cos)| over 200 x 200 pairs
    PRIMARY KEY (run_id, strategy)
);

CREATE TABLE chunks (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    chunk_id          INTEGER NOT NULL,          -- order within the strategy; breaks ties
    doc_id            VARCHAR NOT NULL,
    section           VARCHAR,
    start             INTEGER NOT NULL,
    "end"             INTEGER NOT NULL,
    evidence_start    INTEGER NOT NULL,
    header            VARCHAR,
    content           VARCHAR NOT NULL,
    text              VARCHAR NOT NULL,
    pieces            INTEGER NOT NULL,
    header_pieces     INTEGER NOT NULL,
    PRIMARY KEY (run_id, strategy, chunk_id)
);

CREATE TABLE queries (
    run_id            VARCHAR NOT NULL,
    query_id          VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,          -- in | out
    text              VARCHAR NOT NULL,
    group_id          VARCHAR,                   -- in-domain: ground truth group
    variant           VARCHAR,                   -- in-domain: free label
    kind              VARCHAR,                   -- out-of-domain: near | far
    needle            VARCHAR,
    doc_id            VARCHAR,                   -- resolved span (valid in-domain only)
    start             INTEGER,
    "end"             INTEGER,
    valid             BOOLEAN NOT NULL,          -- scored? (false: invalid needle)
    invalid_reason    VARCHAR,
    line              INTEGER,
    PRIMARY KEY (run_id, query_id)
);

-- One row per scored query and configuration (strategy x retriever).
CREATE TABLE results (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    query_id          VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,          -- in | out
    first_correct_rank INTEGER,                  -- over the full ranking; NULL: none (or destroyed)
    answer_distance   DOUBLE,                    -- cosine distance of the best-ranked correct chunk
    top_distance      DOUBLE,                    -- cosine distance of the rank-1 hit
    destroyed         BOOLEAN NOT NULL,
    PRIMARY KEY (run_id, strategy, retriever, query_id)
);

-- Top 20 hits per query and configuration.
CREATE TABLE hits (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    query_id          VARCHAR NOT NULL,
    rank              INTEGER NOT NULL,          -- 1-based
    chunk_id          INTEGER NOT NULL,
    distance          DOUBLE NOT NULL,           -- cosine distance, whatever the retriever
    score             DOUBLE NOT NULL,           -- the retriever's own score
    correct           BOOLEAN NOT NULL,
    PRIMARY KEY (run_id, strategy, retriever, query_id, rank)
);

-- Ground truths that no chunk's evidence range contains, with the cut that split them.
CREATE TABLE destroyed (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    group_id          VARCHAR NOT NULL,
    doc_id            VARCHAR NOT NULL,
    start             INTEGER NOT NULL,
    "end"             INTEGER NOT NULL,
    cut               INTEGER,                   -- a chunk boundary inside the needle span
    PRIMARY KEY (run_id, strategy, group_id)
);

-- Chunks whose text is over the model's 256-piece window.
-- (derivable from chunks.pieces; kept as a view for the Index screen)
CREATE VIEW over_window AS
    SELECT run_id, strategy, chunk_id, doc_id, section, pieces FROM chunks WHERE pieces > 256;

CREATE TABLE timings (
    run_id            VARCHAR NOT NULL,
    stage             VARCHAR NOT NULL,          -- index | query_embedding | bm25 | vector_scan | rerank | ...
    strategy          VARCHAR,                   -- NULL for run-wide stages
    seconds           DOUBLE NOT NULL,
    items             INTEGER NOT NULL,          -- chunks or queries the stage handled
    per_item_ms       DOUBLE
);

CREATE TABLE decisions (
    decision_id       VARCHAR PRIMARY KEY,
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    threshold         DOUBLE NOT NULL,
    note              VARCHAR,
    created_at        TIMESTAMP NOT NULL
);

-- Embedding cache: keyed by model and text hash, shared by every run.
CREATE TABLE embeddings (
    model             VARCHAR NOT NULL,
    text_hash         VARCHAR NOT NULL,
    dim               INTEGER NOT NULL,
    vector            FLOAT[] NOT NULL,
    PRIMARY KEY (model, text_hash)
);
