-- 0014_traffic_identity: a traffic line's identity is per deployment. Until now a line was its
-- configuration, time, text and occurrence only, so when two deployments on one configuration
-- posted the same text at the same time (each under its own ids), or a deployment posted a line
-- an imported log held already, the second line was taken for the first and never counted.
-- Now a line also carries the deployment that posted it ('' for a line of an imported log: the
-- lines of imported logs share one identity per configuration, as before).
--
-- Every stored line is kept: a line that a deployment's replay stored gets that deployment's
-- name (the replay's import is the one its posted lines name), every other line ''. The posted
-- lines that an earlier replay took for another's are stored now, from what traffic_posted keeps
-- of them (time, text hash, label; their text was scored for the configuration already). Their
-- line_key is a stand-in (their text is no longer in traffic_posted): lines are matched on their
-- time, text hash and occurrence, never on line_key. The imports' own counts stay what each
-- import did at the time.

CREATE TABLE traffic_queries_0014 (
    run_id            VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    retriever         VARCHAR NOT NULL,
    deployment        VARCHAR NOT NULL DEFAULT '', -- the deployment that posted the line; '' for an imported log's
    line_key          BIGINT NOT NULL,
    occurrence        INTEGER NOT NULL,            -- among the lines of its log (or deployment) with its time and text
    import_id         VARCHAR NOT NULL,
    line              BIGINT NOT NULL,             -- line (csv, jsonl) or row (parquet) in its log, 1-based;
                                                   -- for a posted line its arrival order in the deployment
    asked_at          TIMESTAMP NOT NULL,          -- UTC
    text_hash         VARCHAR NOT NULL,
    label             VARCHAR,                     -- answerable | off-topic | NULL (from the log or the post)
    PRIMARY KEY (run_id, strategy, retriever, deployment, line_key, occurrence)
);

INSERT INTO traffic_queries_0014
    (run_id, strategy, retriever, deployment, line_key, occurrence, import_id, line, asked_at, text_hash, label)
SELECT q.run_id, q.strategy, q.retriever,
       coalesce((SELECT min(p.deployment) FROM traffic_posted p WHERE p.import_id = q.import_id), ''),
       q.line_key, q.occurrence, q.import_id, q.line, q.asked_at, q.text_hash, q.label
FROM traffic_queries q;

-- the posted lines a replay counted as another's
INSERT INTO traffic_queries_0014
    (run_id, strategy, retriever, deployment, line_key, occurrence, import_id, line, asked_at, text_hash, label)
SELECT i.run_id, i.strategy, i.retriever, p.deployment,
       (hash(p.deployment, p.post_id) >> 1)::BIGINT, p.occurrence, p.import_id, p.seq, p.asked_at, p.text_hash, p.label
FROM (
    SELECT *, row_number() OVER (PARTITION BY deployment, asked_at, text_hash ORDER BY seq) AS occurrence
    FROM traffic_posted
) p
JOIN traffic_imports i ON i.import_id = p.import_id
WHERE EXISTS (
    SELECT 1 FROM traffic_texts t
    WHERE t.run_id = i.run_id AND t.strategy = i.strategy AND t.retriever = i.retriever AND t.text_hash = p.text_hash
)
AND NOT EXISTS (
    SELECT 1 FROM traffic_queries_0014 n
    WHERE n.run_id = i.run_id AND n.strategy = i.strategy AND n.retriever = i.retriever
      AND n.deployment = p.deployment AND n.asked_at = p.asked_at AND n.text_hash = p.text_hash
      AND n.occurrence = p.occurrence
)
ON CONFLICT DO NOTHING;

DROP TABLE traffic_queries;
ALTER TABLE traffic_queries_0014 RENAME TO traffic_queries;
