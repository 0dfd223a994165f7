-- 0010_traffic_import_process: the process of a running traffic import, so that an import whose
-- process was killed is marked failed by the store's reaper (evalcore.store.connection), as a
-- run or job is, instead of staying 'running' forever.
ALTER TABLE traffic_imports ADD COLUMN host VARCHAR;      -- the machine that ran it
ALTER TABLE traffic_imports ADD COLUMN pid INTEGER;       -- its process id there
ALTER TABLE traffic_imports ADD COLUMN reason VARCHAR;    -- why it failed, when it did
