"""A stored run read back, one concept a module (no Streamlit here).

- :mod:`evalcore.read.runs`: the run list, one run, its configurations and timings;
- :mod:`evalcore.read.compare`: recall@k and MRR, destroyed answers, the paired win/loss matrix;
- :mod:`evalcore.read.comparison.statements`: what a comparison says (the best, a pair, the significant pairs);
- :mod:`evalcore.read.distances`: distances in and out of domain;
- :mod:`evalcore.read.sweeps`: the exact threshold sweep, the gate's table at t, bluffing queries;
- :mod:`evalcore.read.claims`: the threshold claim of a stored configuration, per-segment figures;
- :mod:`evalcore.read.decisions`: saved threshold decisions (with their claim and author);
- :mod:`evalcore.read.queries`: one query's hits, highlight and answer (citations, prompt);
- :mod:`evalcore.read.index`: index health and documents;
- :mod:`evalcore.read.traffic`: stored traffic, its periods and drift, what an import must know;
- :mod:`evalcore.read.files`: the rows the IR formats and run files write out or check, and a
  Parquet traffic log.

Every function takes a :class:`~evalcore.store.Store` first and returns a new DataFrame or a
frozen record; callers may cache the results (complete runs are immutable) and must not
mutate them. The exceptions say so: :mod:`evalcore.read.files.run_members` runs in the caller's
connection (the loader's transaction, its private database), :mod:`evalcore.read.files.parquet`
reads a file. Import the modules by name: ``from evalcore.read import compare``.
"""
