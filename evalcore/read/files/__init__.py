"""The rows :mod:`evalcore.files` writes out or checks, read here:
:mod:`~evalcore.read.files.ir_formats` (a stored run as TREC, ranx and BEIR files need it) and
:mod:`~evalcore.read.files.run_members` (a run file's Parquet members and the store rows they
travel with or are compared to)."""
