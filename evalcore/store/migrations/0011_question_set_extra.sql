-- 0011_question_set_extra: the fields of a question-set item that evalcore does not read itself
-- (an importer's "answer" beside its offsets, a tag, a source), kept as the JSON text of an
-- object in the file's order, so that an export gives back every field an import accepted.
-- NULL: the item had no other field.

ALTER TABLE question_set_items ADD COLUMN extra VARCHAR;
ALTER TABLE question_set_ood ADD COLUMN extra VARCHAR;
