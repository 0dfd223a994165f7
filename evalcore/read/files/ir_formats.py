"""A stored run's rows as :mod:`evalcore.files.ir_formats` writes them (TREC run and qrels,
ranx JSON, a BEIR folder): its queries, one strategy's chunks and relevant chunks, one
configuration's hits and first correct ranks. Read only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


def exported_queries(store: Store, run_id: str) -> pd.DataFrame:
    """query_id, domain, text, kind, variant, group_id, valid of every query of ``run_id``,
    by domain and query id."""
    return store.query(
        "SELECT query_id, domain, text, kind, variant, group_id, valid FROM queries "
        "WHERE run_id = ? ORDER BY domain, query_id",
        [run_id],
    )


def chunks_with_titles(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """chunk_id, doc_id, section, evidence_start, end, text, external_id and the document's
    title of every chunk of ``strategy``, by chunk id."""
    return store.query(
        'SELECT c.chunk_id, c.doc_id, c.section, c.evidence_start, c."end", c.text, c.external_id, d.title '
        "FROM chunks c LEFT JOIN documents d ON d.run_id = c.run_id AND d.doc_id = c.doc_id "
        "WHERE c.run_id = ? AND c.strategy = ? ORDER BY c.chunk_id",
        [run_id, strategy],
    )


def relevant_chunks(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """query_id, group_id, chunk_id: each scored in-domain query with every chunk of
    ``strategy`` that holds its whole answer, by query id and chunk id."""
    return store.query(
        "SELECT q.query_id, q.group_id, c.chunk_id FROM queries q JOIN chunks c ON c.run_id = q.run_id "
        'AND c.doc_id = q.doc_id AND c.evidence_start <= q.start AND q."end" <= c."end" '
        "WHERE q.run_id = ? AND c.strategy = ? AND q.domain = 'in' AND q.valid ORDER BY q.query_id, c.chunk_id",
        [run_id, strategy],
    )


def ranked_hits(store: Store, run_id: str, strategy: str, retriever: str) -> pd.DataFrame:
    """query_id, rank, chunk_id of one configuration's stored hits, by query and rank."""
    return store.query(
        "SELECT query_id, rank, chunk_id FROM hits WHERE run_id = ? AND strategy = ? "
        "AND retriever = ? ORDER BY query_id, rank",
        [run_id, strategy, retriever],
    )


def first_correct_ranks(store: Store, run_id: str, strategy: str, retriever: str) -> pd.DataFrame:
    """query_id, domain, first_correct_rank of one configuration's results, by domain and query id."""
    return store.query(
        "SELECT query_id, domain, first_correct_rank FROM results WHERE run_id = ? "
        "AND strategy = ? AND retriever = ? ORDER BY domain, query_id",
        [run_id, strategy, retriever],
    )
