"""Runs made elsewhere (METHODS.md "Runs made elsewhere"): another system's chunks and rankings, scored like ours.

- :mod:`~evalcore.external.chunks`: chunks read from a file (or seen in responses) and
  located in the corpus; a chunk that cannot be located is kept, reported, never correct.
- :mod:`~evalcore.external.rankings`: ranking files (TREC, JSONL, ranx / BEIR JSON).
- :mod:`~evalcore.external.record`: chunks + rankings -> one stored run (results, hits,
  destroyed answers, failures), the same tables as a built-in run.
- :mod:`~evalcore.external.importer`: ``import-run`` (files).
- :mod:`~evalcore.external.endpoint`, :mod:`~evalcore.external.endpoint_calls` and
  :mod:`~evalcore.external.responses`: ``run-endpoint`` (a live search service: what it is and
  how its answers read, the requests sent, a response cache in the store).
- :mod:`~evalcore.run.evaluate`: ``evalcore.evaluate(retriever=fn)`` (a Python function),
  whose returned hits :mod:`~evalcore.external.python_hits` reads.
"""
