"""What an import or ``forget`` must know of the stored traffic before it writes: which lines
of a batch are stored already (with their labels) and which texts are scored already
(:mod:`evalcore.traffic.replay`), and which scored texts ``forget`` is about to delete
(:mod:`evalcore.traffic.forgetting`). Read only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


def stored_of_batch(
    store: Store,
    key: Sequence[str],
    asked_at: Sequence[datetime],
    hashes: Sequence[str],
    occurrences: Sequence[int],
    deployment: str = "",
) -> tuple[dict[tuple[datetime, str, int], str | None], set[str]]:
    """Of a batch of lines (their times, text hashes and occurrences) for configuration ``key``
    (run id, strategy, retriever) and ``deployment`` (the deployment that posted them; ``""``
    for the lines of an imported log): the lines stored already, by their identity (time, text
    hash, occurrence), with the label stored for each; and the hashes of its texts scored
    already (texts are shared by every line of the configuration): both in one read-only
    connection. The identity is matched on stored columns; a line another deployment posted,
    or an imported log holds, is never this one."""
    import pandas as pd

    want = pd.DataFrame(
        {
            "asked_at": pd.Series(list(asked_at), dtype="datetime64[us]"),
            "text_hash": list(hashes),
            "occurrence": list(occurrences),
        }
    )
    with store.read() as con:
        con.register("_want", want)
        rows = con.execute(
            "SELECT q.asked_at, q.text_hash, q.occurrence, q.label FROM traffic_queries q "
            "JOIN _want w USING (asked_at, text_hash, occurrence) "
            "WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND q.deployment = ?",
            [*key, deployment],
        ).fetchall()
        con.register("_texts", pd.DataFrame({"text_hash": list(dict.fromkeys(hashes))}))
        have = con.execute(
            "SELECT t.text_hash FROM traffic_texts t JOIN _texts w USING (text_hash) "
            "WHERE t.run_id = ? AND t.strategy = ? AND t.retriever = ?",
            list(key),
        ).fetchall()
    return {(at, str(h), int(o)): label for at, h, o, label in rows}, {str(r[0]) for r in have}


def texts_to_forget(store: Store, before: datetime, run_id: str | None = None) -> pd.DataFrame:
    """run_id, strategy, retriever, text of the scored texts ``forget`` deletes: those with no
    line left at or after ``before`` in their configuration (of run ``run_id``, or of all) and
    that no evaluation run asked."""
    scope = " AND t.run_id = ?" if run_id else ""
    return store.query(
        "SELECT t.run_id, t.strategy, t.retriever, t.text FROM traffic_texts t "
        "WHERE NOT EXISTS (SELECT 1 FROM traffic_queries q WHERE q.run_id = t.run_id AND q.strategy = t.strategy "
        "AND q.retriever = t.retriever AND q.text_hash = t.text_hash AND q.asked_at >= ?) "
        "AND NOT EXISTS (SELECT 1 FROM queries e WHERE e.text = t.text)" + scope,
        [before] + ([run_id] if run_id else []),
    )
