"""The run store: one DuckDB file, its connection and migrations, and the one writer of each table.

- :mod:`~evalcore.store.connection`: opening (read-only reads, short write connections, the lock
  retry) and the reaper; :mod:`~evalcore.store.identity`: which file is a store, creating one
  whole; :mod:`~evalcore.store.migrate`: the numbered migrations in ``migrations/``;
  :mod:`~evalcore.store.basics`: the clock, run ids, one row, DuckDB errors as one line.
- One module per table owner, holding every INSERT, UPDATE and DELETE of the store:
  :mod:`~evalcore.store.runs` (``runs`` and a run's lifecycle), :mod:`~evalcore.store.decisions`,
  :mod:`~evalcore.store.caches` (embeddings, extractions), :mod:`~evalcore.store.jobs` (the job
  queue), :mod:`~evalcore.store.traffic.imported` (imported traffic, labels, forget),
  :mod:`~evalcore.store.question_sets`, :mod:`~evalcore.store.triage` (the kept triage of real
  queries), :mod:`~evalcore.store.responses` (the endpoint response
  cache), :mod:`~evalcore.store.loaded_runs` (a run file's rows), :mod:`~evalcore.store.keys` (the
  HTTP API's keys: hashes only); :mod:`~evalcore.store.rows`
  shapes the documents and queries rows every kind of run stores.

:class:`Store` is the connection with the runs, decisions and caches methods in one object;
every importer takes it from here (``from evalcore.store import Store``). :func:`reading` lets a
burst of reads (one page view) share one read-only connection per store file.
"""

from evalcore.store.caches import Caches
from evalcore.store.connection import reading
from evalcore.store.decisions import Decisions
from evalcore.store.runs import Runs


class Store(Runs, Decisions, Caches):
    """A DuckDB run store at ``path``; created (atomically) and migrated on first write."""


__all__ = ["Store", "reading"]
