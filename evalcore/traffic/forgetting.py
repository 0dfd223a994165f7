"""``evalcore traffic forget``: stored traffic deleted for real.

Every log line asked before a time (of one run, or all) goes, with the texts no remaining line
uses, their hits and labels, the embedding cache's vectors of those texts (the cache is keyed by
the text's hash, so a hash left there would tell that the text was asked) and, for a live search
endpoint's configuration, the response cache's requests that sent those texts and their answers.
Then the store file is rewritten (:meth:`evalcore.store.Store.compact`) so that no free page
still holds a forgotten text. The deletions are :func:`evalcore.store.traffic.imported.delete_lines_before`'s, in one
transaction.

The endpoint requests are rebuilt from the configuration's stored endpoint description exactly
as the import sent them (method, URL and body; the query id is ``traffic-`` and 16 characters of
the text's hash); header values are never stored, so every cached answer to that request goes,
whichever headers it was sent with. A text that is also a query of an evaluation run is not
private to traffic: its cached answer is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from evalcore.configurations import info
from evalcore.embedding.embedder import text_hash
from evalcore.external.endpoint import from_spec
from evalcore.read.traffic.known import texts_to_forget
from evalcore.store.traffic import imported as traffic_rows

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What ``forget`` removed: log lines, distinct texts (with their hits and labels), bytes of
    the store file before and after it was rewritten."""

    lines: int
    texts: int
    bytes_before: int
    bytes_after: int


def endpoint_requests(store: Store, before: datetime, run_id: str | None = None) -> pd.DataFrame:
    """``method, url, body`` of the endpoint requests that sent a text ``forget`` is about to
    delete (texts of endpoint configurations with no line left at or after ``before`` in their
    configuration, and that no evaluation run asked)."""
    import pandas as pd

    doomed = texts_to_forget(store, before, run_id)
    rows: list[tuple[str, str, str | None]] = []
    for (run, strategy, retriever), part in doomed.groupby(["run_id", "strategy", "retriever"], sort=False):
        found = info(store, str(run), str(strategy), str(retriever))
        if found.source != "endpoint":
            continue
        endpoint = from_spec({k: v for k, v in found.details().items() if k != "refresh"})
        rows += [endpoint.request(f"traffic-{text_hash(t)[:16]}", t) for t in part["text"]]
    return pd.DataFrame(rows, columns=["method", "url", "body"]).astype(object)


def forget(
    store: Store,
    before: datetime,
    run_id: str | None = None,
    compact: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> Forgotten:
    """Delete every stored log line with a time before ``before`` (UTC; of one run, or all) and
    what goes with it (see the module docstring); then rewrite the store file so the deleted
    text is not left in free pages."""
    requests = endpoint_requests(store, before, run_id) if store.path.exists() else None
    lines, texts = traffic_rows.delete_lines_before(store, before, run_id, requests)
    if on_step is not None:
        on_step(f"deleted {lines} lines and {texts} texts; rewriting the store")
    size = store.path.stat().st_size if store.path.exists() else 0
    if compact and store.path.exists():
        size = store.compact()
    after = store.path.stat().st_size if store.path.exists() else 0
    return Forgotten(lines, texts, size, after)
