-- 0013_deployments: a named deployment (e.g. production) points at a saved decision; every move
-- is kept. Production posts its queries to a deployment, each with the caller's own id, so a
-- query posted twice is stored once (evalcore.service.deployments, evalcore.service.ingest).

-- Where each deployment points now. The decision's figures are copied in when it is deployed
-- (a decision never changes once saved), so production reads one row.
CREATE TABLE deployments (
    name              VARCHAR PRIMARY KEY,
    decision_id       VARCHAR NOT NULL,
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    threshold         DOUBLE NOT NULL,
    claim             VARCHAR,                   -- JSON: the decision's claim (evalcore threshold --json)
    decided_by        VARCHAR,                   -- the decision's author
    decided_at        TIMESTAMP NOT NULL,        -- when the decision was saved
    deployed_by       VARCHAR,                   -- who pointed the deployment at it (key:NAME for a key)
    deployed_at       TIMESTAMP NOT NULL,
    version           INTEGER NOT NULL           -- 1 for the first deployment, +1 for each move
);

-- Every move of a deployment: who, when, from which decision and threshold to which.
CREATE TABLE deployment_moves (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,          -- the deployment's version after the move
    moved_by          VARCHAR,
    moved_at          TIMESTAMP NOT NULL,
    from_decision_id  VARCHAR,                   -- NULL for the first deployment
    from_threshold    DOUBLE,
    to_decision_id    VARCHAR NOT NULL,
    to_threshold      DOUBLE NOT NULL,
    PRIMARY KEY (name, version)
);

-- Queries posted to a deployment, one row per caller's id: the id makes a second post of a
-- query a duplicate. The text waits here until the replay job scores it into the traffic
-- tables (0007); it is then cleared (query texts live only in traffic_texts afterwards).
CREATE TABLE traffic_posted (
    deployment        VARCHAR NOT NULL,
    post_id           VARCHAR NOT NULL,          -- the caller's id of the query
    seq               BIGINT NOT NULL,           -- arrival order within the deployment
    received_at       TIMESTAMP NOT NULL,
    asked_at          TIMESTAMP NOT NULL,        -- UTC
    text_hash         VARCHAR NOT NULL,
    text              VARCHAR,                   -- NULL once replayed
    label             VARCHAR,                   -- answerable | off-topic | NULL
    author            VARCHAR,                   -- who posted it (key:NAME)
    import_id         VARCHAR,                   -- the traffic import that replayed it; NULL while pending
    PRIMARY KEY (deployment, post_id)
);

-- A job is a run (kind 'run') or the replay of a deployment's posted queries (kind 'traffic',
-- its run_id the deployment's run, `deployment` naming it).
ALTER TABLE jobs ADD COLUMN kind VARCHAR DEFAULT 'run';
ALTER TABLE jobs ADD COLUMN deployment VARCHAR;
