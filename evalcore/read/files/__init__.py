"""The rows :mod:`evalcore.files` writes out or checks, read here:
:mod:`~evalcore.read.files.ir_formats` (a stored run as TREC, ranx and BEIR files need it),
:mod:`~evalcore.read.files.run_members` (a run file's Parquet members and the store rows they
travel with or are compared to) and :mod:`~evalcore.read.files.parquet` (a Parquet traffic log,
read in a private in-memory DuckDB)."""
