"""Standard IR formats out of a stored run: TREC run + qrels, ranx JSON, and a BEIR folder.

For each strategy of the run, a folder ``<strategy>/`` that is a BEIR dataset with its runs::

    <strategy>/corpus.jsonl        the strategy's chunks: _id, title, text, metadata
                                   (document, start, end = the evidence range, section)
    <strategy>/queries.jsonl       every query: _id, text, metadata (domain, kind or variant)
    <strategy>/qrels/test.tsv      BEIR qrels: query-id, corpus-id, score (header line)
    <strategy>/qrels.trec          the same as TREC qrels (query_id 0 chunk_id 1)
    <strategy>/qrels.json          the same as ranx Qrels JSON
    <strategy>/runs/<retriever>.trec   TREC run: query_id Q0 chunk_id rank score tag
    <strategy>/runs/<retriever>.json   ranx Run JSON {query_id: {chunk_id: score}}

Relevance: a chunk is relevant to an in-domain query when its evidence range holds the
query's answer (METHODS.md "Correct hits"), so evaluators see exactly evalcore's correct hits. The export is
exact for evalcore's figures, with three choices made for that:

- the score column is ``1/rank``: evaluators sort by score (and break ties their own way),
  so the retriever's own scores, which may tie, would not reproduce evalcore's ranks;
- a built-in run stores its top 20 hits, but its first correct rank is taken over the full
  ranking; when that rank r lies beyond the stored hits, placeholders
  ``evalcore:unstored:<rank>`` (never relevant) fill the ranks in between and a correct chunk
  stands at rank r, so MRR (1/r) and recall@k come out exact (which correct chunk stood there
  is not stored);
- a ground truth no chunk holds (destroyed) gets one relevant pseudo-chunk
  ``evalcore:destroyed:<group>`` that no run returns, so its queries count as misses instead
  of being dropped by evaluators that skip queries without relevant documents.

The qrels list the scored in-domain queries (a query a configuration could not answer, a
failed endpoint call, is left out with its qrels). Runs also hold the out-of-domain queries;
evaluate with ``trec_eval -c`` (or average pytrec_eval over the qrels' queries) and with
ranx's ``make_comparable=True``: then recall@k (ranx ``hit_rate@k``, trec_eval ``success.k``)
and MRR (``mrr``, ``recip_rank``) equal evalcore's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.boundary.files import write_file_atomic
from evalcore.configurations import failures
from evalcore.errors import ConfigError, InputError
from evalcore.read.files import ir_formats as stored
from evalcore.read.refs import resolve_run
from evalcore.read.runs import configurations as run_configurations

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store

log = logging.getLogger(__name__)

UNSTORED = "evalcore:unstored:"
DESTROYED = "evalcore:destroyed:"
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Exported:
    """What :func:`export_formats` wrote: the folder, one sub-folder per strategy, and counts."""

    run_id: str
    folder: str
    strategies: tuple[str, ...]
    files: tuple[str, ...]
    queries: int
    placeholders: int


def folder_name(name: str) -> str:
    """A strategy or retriever name as a file name (``E@all-MiniLM`` stays, ``a/b c`` -> ``a_b_c``);
    never ``.`` or ``..`` (a stored name cannot lead a file outside the export folder)."""
    safe = _UNSAFE.sub("_", name) or "_"
    return "_" * len(safe) if set(safe) == {"."} else safe


def chunk_key(doc_id: str, chunk_id: int, external_id: str | None) -> str:
    """The exported id of a chunk: its own id (imported chunks), else ``<document>#<n>``
    with whitespace replaced (TREC files split on it)."""
    if isinstance(external_id, str) and external_id:
        return external_id
    return f"{_SPACE.sub('_', str(doc_id))}#{int(chunk_id)}"


def _check_ids(ids: list[str], what: str) -> None:
    bad = [i for i in ids if not i or any(ch.isspace() for ch in i)]
    if bad:
        raise ConfigError(f"{what} {bad[0]!r} contains whitespace: TREC files cannot hold it")


def _frames(store: Store, run_id: str, strategy: str) -> dict[str, pd.DataFrame]:
    return {
        "chunks": stored.chunks_with_titles(store, run_id, strategy),
        "relevant": stored.relevant_chunks(store, run_id, strategy),
    }


def _writable_folder(folder: Path) -> Path:
    """``folder``, made when missing; InputError naming it when it is something else (a file,
    a FIFO, a broken link) or cannot be made, before anything is read or written."""
    if folder.is_symlink() and not folder.exists():
        raise InputError(f"--output {str(folder)!r}: a broken symbolic link, not a folder")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--output {str(folder)!r}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--output {str(folder)!r}: cannot make the folder ({exc.strerror or exc})") from None
    return folder


def export_formats(store: Store, run: str, folder: str | Path, configurations: list[str] | None = None) -> Exported:
    """Write ``run`` (run id, name or unique prefix; complete) in the standard formats into
    ``folder`` (see the module docstring). ``configurations`` (``["E/dense", ...]``) limits
    the runs written; their strategies' datasets are written whole."""
    info = resolve_run(store, run)
    run_id = info.run_id
    have = [c.label for c in run_configurations(store, run_id)]
    wanted = configurations or have
    for label in wanted:
        if label not in have:
            raise ConfigError(f"run {run_id} has no configuration {label!r}; it has {', '.join(have)}")
    pairs = [(label.rpartition("/")[0], label.rpartition("/")[2]) for label in wanted]
    folder = _writable_folder(Path(folder))
    queries = stored.exported_queries(store, run_id)
    _check_ids(queries["query_id"].astype(str).tolist(), "query id")
    failed = failures(store, run_id)
    files: list[str] = []
    placeholders = 0
    strategies = list(dict.fromkeys(s for s, _ in pairs))
    for strategy in strategies:
        frames = _frames(store, run_id, strategy)
        chunks = frames["chunks"]
        keys = {
            int(chunk_id): chunk_key(doc_id, chunk_id, external_id)
            for chunk_id, doc_id, external_id in zip(
                chunks["chunk_id"], chunks["doc_id"], chunks["external_id"], strict=True
            )
        }
        _check_ids(list(keys.values()), "chunk id")
        out = folder / folder_name(strategy)
        (out / "qrels").mkdir(parents=True, exist_ok=True)
        (out / "runs").mkdir(exist_ok=True)
        left_out = set(failed.loc[failed["strategy"] == strategy, "query_id"].astype(str))
        scored = queries[(queries["domain"] == "in") & queries["valid"] & ~queries["query_id"].isin(left_out)]
        qrels: dict[str, dict[str, int]] = {str(q): {} for q in scored["query_id"]}
        relevant = frames["relevant"]
        for query_id, chunk_id in zip(relevant["query_id"], relevant["chunk_id"], strict=True):
            if str(query_id) in qrels:
                qrels[str(query_id)][keys[int(chunk_id)]] = 1
        groups = dict(zip(scored["query_id"].astype(str), scored["group_id"].astype(str), strict=True))
        for q, rel in qrels.items():
            if not rel:
                rel[f"{DESTROYED}{groups[q]}"] = 1
        files += _write_dataset(out, chunks, keys, queries, qrels)
        for retriever in [r for s, r in pairs if s == strategy]:
            ranking, filled = _ranking(store, run_id, strategy, retriever, keys, qrels)
            placeholders += filled
            files += _write_run(out / "runs", folder_name(retriever), f"{strategy}/{retriever}", ranking)
    log.info("exported run %s to %s: %d files", run_id, folder, len(files))
    return Exported(run_id, str(folder), tuple(strategies), tuple(files), len(queries), placeholders)


def _write_dataset(
    out: Path, chunks: pd.DataFrame, keys: dict[int, str], queries: pd.DataFrame, qrels: dict[str, dict[str, int]]
) -> list[str]:
    def rows(frame: pd.DataFrame) -> Iterator[Any]:
        # named tuples of the frame's columns (fields known at run time), missing cells as None
        return frame.astype(object).where(frame.notna(), None).itertuples()

    corpus: list[str] = []
    for r in rows(chunks):
        meta: dict[str, Any] = {"document": r.doc_id, "section": r.section}
        if r.evidence_start is not None:
            meta.update(start=int(r.evidence_start), end=int(r.end))
        item = {"_id": keys[int(r.chunk_id)], "title": r.title or r.doc_id, "text": r.text, "metadata": meta}
        corpus.append(json.dumps(item, ensure_ascii=False) + "\n")
    write_file_atomic(out, "corpus.jsonl", "".join(corpus))
    lines: list[str] = []
    for r in rows(queries):
        meta = (
            {"domain": r.domain, "kind": r.kind}
            if r.domain == "out"
            else {"domain": r.domain, "variant": r.variant, "group": r.group_id, "scored": bool(r.valid)}
        )
        lines.append(json.dumps({"_id": str(r.query_id), "text": r.text, "metadata": meta}, ensure_ascii=False) + "\n")
    write_file_atomic(out, "queries.jsonl", "".join(lines))
    tsv = ["query-id\tcorpus-id\tscore\n"] + [f"{q}\t{c}\t{v}\n" for q, rel in qrels.items() for c, v in rel.items()]
    write_file_atomic(out / "qrels", "test.tsv", "".join(tsv))
    write_file_atomic(
        out, "qrels.trec", "".join(f"{q} 0 {c} {v}\n" for q, rel in qrels.items() for c, v in rel.items())
    )
    write_file_atomic(out, "qrels.json", json.dumps(qrels, ensure_ascii=False))
    return [str(out / n) for n in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels.trec", "qrels.json")]


def _ranking(
    store: Store, run_id: str, strategy: str, retriever: str, keys: dict[int, str], qrels: dict[str, dict[str, int]]
) -> tuple[dict[str, list[str]], int]:
    """{query id: chunk ids in rank order}, placeholders filled up to a first correct rank that
    lies beyond the stored hits; and how many placeholders were written."""
    import pandas as pd

    hits = stored.ranked_hits(store, run_id, strategy, retriever)
    results = stored.first_correct_ranks(store, run_id, strategy, retriever)
    by_query: dict[str, list[str]] = {}
    for q, group in hits.groupby("query_id", sort=False):
        by_query[str(q)] = [keys[int(c)] for c in group.sort_values("rank")["chunk_id"]]
    out: dict[str, list[str]] = {}
    filled = 0
    for query_id, domain, first_correct_rank in zip(
        results["query_id"], results["domain"], results["first_correct_rank"], strict=True
    ):
        q = str(query_id)
        if domain == "in" and q not in qrels:
            continue  # left out (a failed call elsewhere in the strategy)
        ranked = list(by_query.get(q, []))
        first = None if pd.isna(first_correct_rank) else int(first_correct_rank)
        if first is not None and first > len(ranked):
            shown = set(ranked)
            answer = next(c for c in qrels[q] if c not in shown)
            ranked += [f"{UNSTORED}{rank}" for rank in range(len(ranked) + 1, first)] + [answer]
            filled += first - 1 - len(by_query.get(q, []))
        out[q] = ranked
    return out, filled


def _write_run(folder: Path, stem: str, tag: str, ranking: dict[str, list[str]]) -> list[str]:
    tag = folder_name(tag)
    trec = "".join(
        f"{q} Q0 {c} {rank} {1.0 / rank!r} {tag}\n" for q, chunks in ranking.items() for rank, c in enumerate(chunks, 1)
    )
    write_file_atomic(folder, f"{stem}.trec", trec)
    write_file_atomic(
        folder,
        f"{stem}.json",
        json.dumps({q: {c: 1.0 / rank for rank, c in enumerate(chunks, start=1)} for q, chunks in ranking.items()}),
    )
    return [str(folder / f"{stem}.trec"), str(folder / f"{stem}.json")]
