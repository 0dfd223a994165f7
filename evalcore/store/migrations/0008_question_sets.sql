-- 0008_question_sets: question sets (named, versioned ground truth) authored in evalcore.
-- A version is immutable: every save inserts a new version with all its items; nothing here
-- is ever updated or deleted. The one writer of these tables is evalcore.qsets.

CREATE TABLE question_sets (
    name              VARCHAR PRIMARY KEY,
    created_at        TIMESTAMP NOT NULL,
    author            VARCHAR                    -- who made version 1 (NULL: not recorded)
);

CREATE TABLE question_set_versions (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,          -- 1, 2, ... in save order
    parent            INTEGER,                   -- the version it was edited from (NULL: a new set)
    author            VARCHAR,                   -- evalcore.authors (NULL: not recorded)
    created_at        TIMESTAMP NOT NULL,
    note              VARCHAR,
    origin            VARCHAR,                   -- import DIR | dashboard | ...
    PRIMARY KEY (name, version)
);

-- In-domain items. An item authored by its needle text has ``needle`` (and, when it was
-- selected in a document, ``doc_id``/``start``/``end`` where it was selected); an item
-- authored as an exact span has ``doc_id``/``start``/``end`` and no needle.
CREATE TABLE question_set_items (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    position          INTEGER NOT NULL,          -- 1-based order (the line in the exported file)
    item_id           VARCHAR NOT NULL,
    question          VARCHAR NOT NULL,
    group_id          VARCHAR NOT NULL,
    variant           VARCHAR NOT NULL,
    needle            VARCHAR,
    doc_id            VARCHAR,
    start             INTEGER,
    "end"             INTEGER,
    PRIMARY KEY (name, version, item_id)
);

-- Off-topic items: queries the corpus does not answer.
CREATE TABLE question_set_ood (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    position          INTEGER NOT NULL,
    item_id           VARCHAR NOT NULL,
    query             VARCHAR NOT NULL,
    kind              VARCHAR NOT NULL,          -- near | far
    PRIMARY KEY (name, version, item_id)
);

-- The question-set version a run used (NULL: the run read question files).
ALTER TABLE runs ADD COLUMN question_set VARCHAR;
ALTER TABLE runs ADD COLUMN question_set_version INTEGER;
