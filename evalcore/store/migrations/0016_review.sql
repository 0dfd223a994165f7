-- 0016_review: the review sample by design (evalcore.traffic.sampling, evalcore.store.review).
-- A deployment version's lines are cut into review periods of 7 days; once a period has ended its
-- SAMPLING FRAME is drawn: the lines stored then, split by what the gate did at the deployed t
-- into the answered and the refused stratum. Each stratum gets a seeded random order and its
-- sample is the first n lines of that order; taking more lines continues the same order. Labels
-- are given to sampled lines; only a stratum's labelled prefix (ranks 1..r, every one labelled)
-- enters an estimate. The borderline list's labels (traffic_labels, 0007) never do.

-- One frame per deployment version and review period, drawn once the period has ended.
CREATE TABLE review_frames (
    frame_id          VARCHAR PRIMARY KEY,       -- 12 hex digits
    deployment        VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    period_index      INTEGER NOT NULL,          -- 1-based period of the version
    period_start      TIMESTAMP NOT NULL,        -- UTC; 00:00 of the version's first day + 7 days each
    period_end        TIMESTAMP NOT NULL,        -- UTC; the next move when the version ended inside it
    lines_from        TIMESTAMP NOT NULL,        -- UTC; the frame's lines were asked in [lines_from, period_end):
                                                 -- the version's deployed_at in its first period, else period_start
    decision_id       VARCHAR NOT NULL,          -- what was deployed in the period
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    threshold         DOUBLE NOT NULL,
    seed              UBIGINT NOT NULL,          -- the random 64-bit seed of the strata's orders
    second_share      DOUBLE NOT NULL,           -- the share of sampled lines offered to a second person
    drawn_at          TIMESTAMP NOT NULL,        -- UTC; the frame's lines are those stored by then
    drawn_by          VARCHAR,
    answered_lines    BIGINT NOT NULL,           -- N_A: the frame's lines the gate answered at t
    refused_lines     BIGINT NOT NULL,           -- N_R: those it refused
    answered_asked    INTEGER NOT NULL,          -- the sample size asked for the answered stratum
    refused_asked     INTEGER NOT NULL,
    answered_size     INTEGER NOT NULL,          -- n_A: the size taken (asked, raised when the period drifted)
    refused_size      INTEGER NOT NULL,
    reason            VARCHAR,                   -- why the sizes were raised ("drift: ..."), else NULL
    UNIQUE (deployment, version, period_start)
);

-- The traffic imports whose lines make up a frame: those no longer running when it was drawn.
-- A line stored later (by an import still running then, or a later one) is outside the frame.
CREATE TABLE review_frame_imports (
    frame_id          VARCHAR NOT NULL,
    import_id         VARCHAR NOT NULL,
    PRIMARY KEY (frame_id, import_id)
);

-- The sampled lines: the first ranks of each stratum's seeded order (inclusion n/N).
CREATE TABLE review_sample (
    frame_id          VARCHAR NOT NULL,
    stratum           VARCHAR NOT NULL CHECK (stratum IN ('answered', 'refused')),
    rank              INTEGER NOT NULL,          -- 1-based place in the stratum's order
    run_id            VARCHAR NOT NULL,          -- the line's identity (traffic_queries, 0014)
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    deployment        VARCHAR NOT NULL,
    line_key          BIGINT NOT NULL,
    occurrence        INTEGER NOT NULL,
    second            BOOLEAN NOT NULL,          -- offered to a second person after its first label
    PRIMARY KEY (frame_id, stratum, rank)
);

-- Labels of sampled lines: one first label, and for a line offered to a second person one second
-- label by another author (second labels measure agreement and never enter an estimate).
CREATE TABLE review_labels (
    frame_id          VARCHAR NOT NULL,
    stratum           VARCHAR NOT NULL,
    rank              INTEGER NOT NULL,
    role              VARCHAR NOT NULL CHECK (role IN ('first', 'second')),
    label             VARCHAR NOT NULL CHECK (label IN ('off-topic', 'answerable')),
    hits_hold_answer  BOOLEAN,                   -- answerable only: whether its hits hold the answer (NULL: unknown)
    author            VARCHAR NOT NULL,
    labelled_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (frame_id, stratum, rank, role),
    CHECK (label = 'answerable' OR hits_hold_answer IS NULL)
);
