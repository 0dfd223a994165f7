-- 0002_jobs: background jobs started from the dashboard (evalcore.jobs).
-- A job is one run executed by its own OS process (`python -m evalcore job JOB_ID`).

CREATE TABLE jobs (
    job_id            VARCHAR PRIMARY KEY,
    run_id            VARCHAR NOT NULL,          -- the run the job makes (runs row appears when it starts)
    name              VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,          -- queued | running | complete | failed | cancelled
    stage             VARCHAR,                   -- before the run row exists: waiting, loading inputs, loading the model
    created_at        TIMESTAMP NOT NULL,        -- queue order: created_at, then job_id
    started_at        TIMESTAMP,
    finished_at       TIMESTAMP,
    spec              VARCHAR NOT NULL,          -- JSON: source, corpus, questions, ood, strategies, retrievers, model
    pid               INTEGER,                   -- the job's process (crash detection)
    host              VARCHAR,
    cancel_requested  BOOLEAN NOT NULL DEFAULT false,
    reason            VARCHAR                    -- why failed / cancelled
);
