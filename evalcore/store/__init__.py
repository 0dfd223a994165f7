"""The run store: one DuckDB file, its connection and migrations, and the one writer of each table.

- :mod:`~evalcore.store.connection`: opening (read-only reads, short write connections, the lock
  retry) and the reaper; :mod:`~evalcore.store.identity`: which file is a store, creating one
  whole; :mod:`~evalcore.store.migrate`: the numbered migrations in ``migrations/``.
- One module per table owner: :mod:`~evalcore.store.runs` (``runs`` and a run's lifecycle),
  :mod:`~evalcore.store.decisions`, :mod:`~evalcore.store.caches` (embeddings, extractions).

:class:`Store` is all of these in one object; every importer takes it from here.
"""

from evalcore.store.caches import Caches
from evalcore.store.decisions import Decisions
from evalcore.store.runs import Runs


class Store(Runs, Decisions, Caches):
    """A DuckDB run store at ``path``; created (atomically) and migrated on first write."""


__all__ = ["Store"]
