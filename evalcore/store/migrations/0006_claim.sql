-- 0006_claim: a saved decision carries the threshold claim it was made under and who made it.
-- author: the trusted request header the operator names (EVALCORE_USER_HEADER) on the
-- dashboard, the OS user from the CLI; NULL when not recorded. The claim columns are NULL for
-- decisions saved before this migration and for runs where no claim can be made (no off-topic
-- or no answerable query).
ALTER TABLE decisions ADD COLUMN author VARCHAR;
ALTER TABLE decisions ADD COLUMN max_bluff_rate DOUBLE;     -- alpha
ALTER TABLE decisions ADD COLUMN max_lost_rate DOUBLE;      -- beta
ALTER TABLE decisions ADD COLUMN confidence DOUBLE;         -- 1 - delta
ALTER TABLE decisions ADD COLUMN n_ood INTEGER;             -- off-topic questions the claim counts
ALTER TABLE decisions ADD COLUMN n_answerable INTEGER;      -- answerable in-domain questions
ALTER TABLE decisions ADD COLUMN bluff_status VARCHAR;      -- too_few | unbounded | bounded
ALTER TABLE decisions ADD COLUMN lost_status VARCHAR;       -- too_few | unbounded | bounded
ALTER TABLE decisions ADD COLUMN bluff_ok_up_to DOUBLE;     -- the bluff claim's boundary
ALTER TABLE decisions ADD COLUMN lost_ok_above DOUBLE;      -- the lost claim's boundary
ALTER TABLE decisions ADD COLUMN claim_method VARCHAR;      -- how the claim was computed
ALTER TABLE decisions ADD COLUMN claim VARCHAR;             -- JSON: the whole claim (evalcore threshold --json)
