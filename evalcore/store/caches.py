"""The caches shared by every run: embedding vectors by model and text hash, and document
extractions by file hash, extractor and its version (migration 0004)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.records import Extraction
from evalcore.store.basics import now, one_row
from evalcore.store.connection import Connection

if TYPE_CHECKING:
    import duckdb
    import numpy as np


def forget_vectors(con: duckdb.DuckDBPyConnection, forgotten: str) -> int:
    """Inside ``con``'s transaction: delete the cached vectors (every model) of the text hashes
    in the registered view or table ``forgotten`` (column ``text_hash``) that no stored traffic
    text still uses, so that a forgotten text's hash and vector leave the cache (``traffic
    forget``); returns how many rows went. A text an evaluation shares is simply embedded again
    when next needed."""
    where = (
        f"text_hash IN (SELECT text_hash FROM {forgotten}) "
        "AND NOT EXISTS (SELECT 1 FROM traffic_texts t WHERE t.text_hash = embeddings.text_hash)"
    )
    found = one_row(con, f"SELECT count(*) FROM embeddings WHERE {where}")
    con.execute(f"DELETE FROM embeddings WHERE {where}")
    return int(found[0])


class Caches(Connection):
    """The one writer of ``embeddings`` and ``extractions``."""

    # -- embedding cache -----------------------------------------------------------
    def cached_vectors(self, model: str, hashes: list[str]) -> dict[str, tuple[int, list[float]]]:
        """(dim, vector) of each cached text hash under ``model``."""
        if not hashes:
            return {}
        import pandas as pd

        with self.read() as con:
            con.register("_want", pd.DataFrame({"text_hash": hashes}))
            rows = con.execute(
                "SELECT e.text_hash, e.dim, e.vector FROM embeddings e "
                "JOIN _want w USING (text_hash) WHERE e.model = ?",
                [model],
            ).fetchall()
        return {h: (dim, vec) for h, dim, vec in rows}

    def cache_vectors(self, model: str, dim: int, items: dict[str, list[float]] | dict[str, np.ndarray]) -> None:
        """Keep vectors under (model, text hash) for later runs (a key already there is left as
        it is). float32 rows go to DuckDB as arrays, not Python lists: 4 times faster."""
        if not items:
            return
        import pandas as pd

        df = pd.DataFrame(
            {
                "model": model,
                "text_hash": list(items),
                "dim": dim,
                "vector": list(items.values()),
            }
        )
        with self.transaction() as con:
            con.register("_new", df)
            con.execute("INSERT INTO embeddings SELECT model, text_hash, dim, vector FROM _new ON CONFLICT DO NOTHING")

    # -- extraction cache (0004) ---------------------------------------------------------
    def cached_extractions(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], Extraction]:
        """Cached extractions of ``(file sha256, extractor, version)`` keys; missing keys are absent."""
        if not keys:
            return {}
        import pandas as pd

        want = pd.DataFrame(keys, columns=["file_hash", "extractor", "extractor_version"]).drop_duplicates()
        with self.read() as con:
            con.register("_want", want)
            rows = con.execute(
                "SELECT x.file_hash, x.extractor, x.extractor_version, x.title, x.text, x.page_starts, x.notes "
                "FROM extractions x JOIN _want w USING (file_hash, extractor, extractor_version)"
            ).fetchall()
        return {
            (h, n, v): Extraction(title, text, tuple(starts or ()), tuple(notes or ()))
            for h, n, v, title, text, starts, notes in rows
        }

    def cache_extractions(self, items: dict[tuple[str, str, str], Extraction]) -> None:
        """Keep extractions for later runs (an existing key is left as it is)."""
        if not items:
            return
        with self.transaction() as con:
            for (file_hash, name, version), x in items.items():
                con.execute(
                    "INSERT INTO extractions VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [
                        file_hash,
                        name,
                        version,
                        x.title,
                        x.text,
                        list(x.page_starts) or None,
                        list(x.notes) or None,
                        now(),
                    ],
                )
