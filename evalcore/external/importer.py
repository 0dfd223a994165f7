"""``import-run``: a run made elsewhere, read from a chunk file and a rankings file.

Everything is read and checked before the store is touched: a malformed chunk or rankings
file, a chunk the rankings name that the chunk file lacks, or a query that is in neither
question file, ends with one InputError naming the file and line, and nothing is stored.
Chunks that cannot be located are not errors: they are stored with their reason, reported,
and never correct. Queries the rankings leave out are scored as answered with nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.boundary.text import check_run_name
from evalcore.configurations import EXTERNAL, external
from evalcore.errors import ConfigError, InputError, control_characters
from evalcore.external.chunks import read_chunks
from evalcore.external.rankings import read_rankings
from evalcore.external.record import record, resolve_rankings
from evalcore.store.basics import new_run_id

if TYPE_CHECKING:
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Imported:
    """What ``import-run`` stored: the run id and what the user should hear about."""

    run_id: str
    name: str
    chunks: int
    unlocated: tuple[tuple[str, str, str], ...]  # (chunk id, where, reason)
    notes: tuple[tuple[str, str, str], ...]  # (chunk id, where, warning) of located chunks
    unranked: tuple[str, ...]  # query ids the rankings leave out
    format: str
    warnings: tuple[str, ...] = field(default=())


def import_run(
    store: Store,
    corpus: Corpus,
    gt: GroundTruth,
    chunks_path: str | Path,
    rankings_path: str | Path,
    name: str,
    chunker: str = EXTERNAL,
    retriever: str = EXTERNAL,
    score: str = "similarity",
    fmt: str | None = None,
    run_id: str | None = None,
) -> Imported:
    """Read, check, score and store one external configuration (see the module docstring)."""

    name = check_run_name(name)
    check_label(chunker, "--chunker")
    check_label(retriever, "--retriever")
    if not gt.valid_questions:
        raise InputError("no valid in-domain question to score (every needle is invalid); see validate")
    t0 = time.perf_counter()
    chunks = read_chunks(chunks_path, corpus)
    t_chunks = time.perf_counter() - t0
    rankings = read_rankings(rankings_path, score, fmt)
    hits, unranked = resolve_rankings(rankings, chunks, gt, str(chunks_path))
    rankings_format, rankings_tags = rankings.format, list(rankings.tags)
    del rankings  # its chunk names: the hits are held by chunk-set id from here on
    t_all = time.perf_counter() - t0
    config = external(
        chunker,
        retriever,
        "import",
        score,
        {
            "chunks": str(chunks_path),
            "rankings": str(rankings_path),
            "format": rankings_format,
            "tags": rankings_tags,
        },
    )
    run_id = run_id or new_run_id()
    settings = {
        "chunks_path": str(chunks_path),
        "rankings_path": str(rankings_path),
        "rankings_format": rankings_format,
        "unranked_queries": len(unranked),
        "unlocated_chunks": len(chunks.unlocated),
    }
    record(
        store,
        run_id,
        name,
        config,
        chunks,
        corpus,
        gt,
        hits,
        settings,
        timings=[("locate_chunks", t_chunks, len(chunks)), ("read_rankings", t_all - t_chunks, len(hits))],
    )
    return Imported(
        run_id,
        name,
        len(chunks),
        tuple((c.external_id, c.where, str(c.problem)) for c in chunks.unlocated),
        tuple((c.external_id, c.where, str(c.note)) for c in chunks.notes),
        tuple(unranked),
        rankings_format,
    )


def check_label(value: str, option: str) -> None:
    """The name of a chunker or retriever the caller gives (``option`` names where it came from):
    ConfigError unless it can label a configuration and name its export folder."""

    if (
        not value
        or value in (".", "..")
        or "/" in value
        or ":" in value
        or any(ch.isspace() for ch in value)
        or control_characters(value)
    ):
        raise ConfigError(
            f"{option} {value!r}: a name without '/', ':', whitespace or control characters, and not '.' "
            "or '..' (it labels the configuration STRATEGY/RETRIEVER and names its export folder)"
        )
