-- 0015_job_keys: the API key that queued a job (evalcore.api.evaluations), so the queue can cap
-- how many jobs one key holds at once (evalcore.jobs.queue). NULL for a job queued by the New run
-- screen, the CLI or a traffic post.

ALTER TABLE jobs ADD COLUMN queued_by VARCHAR;
