-- 0004_documents: documents beyond Markdown (METHODS.md "The words"): PDF page maps, extraction notes,
-- the file hash, and the extraction cache shared by every run.

-- Page map of a paged document: page i + 1 begins at offset page_starts[i] of documents.text
-- (NULL for documents without pages). pages = the number of pages.
ALTER TABLE documents ADD COLUMN pages INTEGER;
ALTER TABLE documents ADD COLUMN page_starts INTEGER[];
-- What extraction met without failing, e.g. "no text on page(s) 3 ..." (NULL when nothing).
ALTER TABLE documents ADD COLUMN notes VARCHAR[];
-- sha256 of the file's bytes (NULL for documents that did not come from a file).
ALTER TABLE documents ADD COLUMN file_hash VARCHAR;

-- Extraction cache: keyed by the file's sha256 and the extractor's name and version, so a
-- changed file or a new extractor version extracts anew. Only successful extractions.
CREATE TABLE extractions (
    file_hash         VARCHAR NOT NULL,
    extractor         VARCHAR NOT NULL,
    extractor_version VARCHAR NOT NULL,
    title             VARCHAR NOT NULL,
    text              VARCHAR NOT NULL,
    page_starts       INTEGER[],
    notes             VARCHAR[],
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (file_hash, extractor, extractor_version)
);
