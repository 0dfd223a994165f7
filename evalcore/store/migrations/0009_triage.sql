-- 0009_triage: a person's progress through a pasted list of real user queries (the Questions
-- screen's "From real queries"), kept per (question set name, author) so they can stop and go on
-- later. The list is in paste order; each query has at most one decision. The one writer of
-- this table is evalcore.store.triage.

CREATE TABLE triage_queries (
    set_name          VARCHAR NOT NULL,          -- the question set the list is triaged for
    author            VARCHAR NOT NULL,          -- evalcore.authors ('' : not recorded)
    position          INTEGER NOT NULL,          -- 1, 2, ... in the order the queries were pasted
    query             VARCHAR NOT NULL,          -- distinct within (set_name, author)
    decision          VARCHAR,                   -- NULL: not decided | near | far | answer | skip
    decided_at        TIMESTAMP,
    PRIMARY KEY (set_name, author, position)
);
