"""Index health of a run (METHODS.md "Index health"): per strategy chunks, word pieces, header share, chunks
over the model's window, destroyed answers with the cut that split them, the normalisation
check; and the documents with their stamp and staleness."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore import PIPELINE_VERSION
from evalcore.inputs.extract import stale_reason
from evalcore.read.runs import by_strategy_order, strategies_of

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


def index_health(store: Store, run_id: str) -> pd.DataFrame:
    """Per strategy, in the run's order: chunks, pieces, header share, over_window, destroyed,
    norm_max_diff (and the recipe: size, overlap, boundaries, header)."""
    df = store.query(
        "SELECT strategy, size, overlap, boundaries, header, chunks, pieces, header_pieces, "
        "over_window, destroyed, norm_max_diff FROM strategies WHERE run_id = ?",
        [run_id],
    )
    df = by_strategy_order(df, store, run_id)
    df["header_share"] = (df["header_pieces"] / df["pieces"]).where(df["pieces"] > 0)
    return df


def over_window_chunks(store: Store, run_id: str) -> pd.DataFrame:
    """strategy, chunk_id, doc_id, section, pieces of chunks over the 256-piece window."""
    return store.query(
        "SELECT strategy, chunk_id, doc_id, coalesce(section, '') AS section, pieces FROM over_window WHERE run_id = ? "
        "ORDER BY strategy, chunk_id",
        [run_id],
    )


def unlocated_chunks(store: Store, run_id: str) -> pd.DataFrame:
    """Chunks of a run made elsewhere that could not be located in the corpus: strategy, chunk
    (the id the other system gave), doc_id (the document it named), reason, content. Such a
    chunk is kept and never correct (docs/EXTERNAL.md); a built-in run has none."""
    return store.query(
        "SELECT strategy, external_id AS chunk, doc_id, problem AS reason, content FROM chunks "
        "WHERE run_id = ? AND problem IS NOT NULL ORDER BY strategy, chunk_id",
        [run_id],
    )


def destroyed_list(store: Store, run_id: str, context: int = 40) -> pd.DataFrame:
    """Destroyed ground truths with the cut that split them.

    Columns: strategy, group_id, doc_id, start, end, cut, before_cut, after_cut (the
    needle's text on each side of the cut; the whole needle in before_cut when no cut is
    recorded), context_before, context_after (``context`` characters around the needle),
    why (a cut split it, or no chunk holds the text at all).
    """
    df = store.query(
        """
        SELECT x.strategy, x.group_id, x.doc_id, x.start, x."end", x.cut,
               substr(d.text, greatest(x.start - ?, 0) + 1, x.start - greatest(x.start - ?, 0)) AS context_before,
               substr(d.text, x.start + 1, coalesce(x.cut, x."end") - x.start) AS before_cut,
               CASE WHEN x.cut IS NULL THEN '' ELSE substr(d.text, x.cut + 1, x."end" - x.cut) END AS after_cut,
               substr(d.text, x."end" + 1, ?) AS context_after,
               CASE WHEN x.cut IS NULL
                    THEN 'no chunk holds this text (boundaries without intro leave out '
                         || 'the text before the first ## heading)'
                    ELSE 'split by the cut at offset ' || x.cut::VARCHAR END AS why
        FROM destroyed x LEFT JOIN documents d ON d.run_id = x.run_id AND d.doc_id = x.doc_id
        WHERE x.run_id = ? ORDER BY x.strategy, x.group_id
        """,
        [context, context, context, run_id],
    )
    return df


def documents(store: Store, run_id: str) -> pd.DataFrame:
    """Documents of a run with state, extractor, model stamp, pages (PDF), notes (e.g. empty
    pages), ``stale`` and ``chunks X`` (the document's chunk count under strategy X, one column
    a strategy).

    A document is stale when it was indexed under another pipeline version than
    :data:`evalcore.PIPELINE_VERSION` or another version of its extractor than the
    current one; ``stale_reason`` says which. Failed documents are never stale.
    """
    df = store.query(
        "SELECT doc_id, coalesce(title, '') AS title, state, coalesce(reason, '') AS reason, extractor, "
        "extractor_version, coalesce(model, '') AS model, model_dim, "
        "coalesce(pipeline_version, '') AS pipeline_version, "
        "characters, sections, pages, coalesce(array_to_string(notes, '; '), '') AS notes, "
        "coalesce(path, '') AS path FROM documents WHERE run_id = ? "
        "ORDER BY state DESC, doc_id",
        [run_id],
    )

    reasons = []
    for state, pipeline_version, extractor_name, extractor_version in zip(
        df["state"], df["pipeline_version"], df["extractor"], df["extractor_version"], strict=True
    ):
        why = []
        if state == "indexed":
            if pipeline_version != PIPELINE_VERSION:
                why.append(f"pipeline {pipeline_version} (now {PIPELINE_VERSION})")
            extractor = stale_reason(extractor_name, extractor_version)
            if extractor:
                why.append(extractor)
        reasons.append("; ".join(why))
    df["stale"] = [bool(r) for r in reasons]
    df["stale_reason"] = reasons
    # chunks per document, counted by the system after chunking (METHODS.md "The words"): one column a strategy
    counts = store.query("SELECT doc_id, strategy, count(*) AS n FROM chunks WHERE run_id = ? GROUP BY ALL", [run_id])
    if not counts.empty:
        order = strategies_of(store, run_id)
        wide = counts.pivot(index="doc_id", columns="strategy", values="n")
        for strategy in [s for s in order if s in wide.columns]:
            df[f"chunks {strategy}"] = df["doc_id"].map(wide[strategy]).fillna(0).astype("int64")
    return df


def chunk_texts(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """chunk_id, text of every chunk of one strategy, by chunk id (what a replay indexes again)."""
    return store.query(
        "SELECT chunk_id, text FROM chunks WHERE run_id = ? AND strategy = ? ORDER BY chunk_id",
        [run_id, strategy],
    )


def chunk_ids_by_external_id(store: Store, run_id: str, strategy: str) -> dict[str, int]:
    """{the service's own chunk id: chunk id} of one strategy's chunks that carry one (a run
    made by a search endpoint)."""
    chunks = store.query(
        "SELECT chunk_id, external_id FROM chunks WHERE run_id = ? AND strategy = ? AND external_id IS NOT NULL",
        [run_id, strategy],
    )
    return {str(e): int(c) for c, e in zip(chunks["chunk_id"], chunks["external_id"], strict=True)}
