"""Production queries replayed against one configuration of a run (``evalcore traffic import``).

Each logged query is embedded with the run's model (vectors cached by text hash, as for every
run), retrieved against that configuration's stored chunks by the run's own code
(:func:`evalcore.retrieval.ranking.rank_block`: dense, bm25, hybrid, rerank exactly as in the run) and
stored with its time, its top hits with their distances, and the gate's value: the smallest
distance among its top 4 hits (METHODS.md "Real traffic"). A query text is scored once per configuration, however
often it was asked; every log line is stored (its time and label) and counted.

Re-importing a log adds nothing: a line's identity is its configuration, its time and text
plus its occurrence number in the log (the second line with the same time and text is
occurrence 2), so an interrupted import, run again, goes on where it stopped and a log that grew
adds only its new lines. Imported logs share that identity within a configuration; the lines a
deployment posts (:mod:`evalcore.traffic.posted`) have one of their own, per deployment
(``traffic_queries.deployment``, migration 0014), so two deployments on one configuration, or a
deployment and an imported log, never take each other's lines. The identity never depends on
import options: a label is what a line says, not what it is, so importing the same log with or
without its labels stores the same lines; a label the log gives to a line stored before without
one is added to it. Lines are read, scored and
written a batch at a time (one transaction each), so memory stays bounded; the only state that
grows with the log is 8 bytes per line for the occurrence numbers. An import whose process is
killed stays ``running`` only until the store's reaper sees its process gone and marks it
failed; importing the log again goes on where it stopped.

A live search endpoint's configuration is replayed by sending each new text to the endpoint as
the run did, through the response cache (a text the cache holds is not sent again); a query the
endpoint could not answer is kept with the reason and left out of every figure, never counted as
refused. A run imported from rankings, or one made by a Python function, has no retriever to
replay and is refused with one line.

The traffic tables (migrations 0007 and 0014: imports, lines, scored texts, hits, labels) are written by
:mod:`evalcore.store.traffic.imported`, called from here; forgetting is :mod:`evalcore.traffic.forgetting`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.authors import os_author
from evalcore.embedding.embedder import text_hash
from evalcore.errors import InputError
from evalcore.progress import SilentProgress, Stage
from evalcore.read.traffic.known import stored_of_batch
from evalcore.store.basics import now
from evalcore.store.traffic import imported as traffic_rows
from evalcore.store.traffic.imported import LABELS
from evalcore.traffic.log import BATCH, LogFields, LogLine, LogProblem, count_lines, infer_format, read_log
from evalcore.traffic.replayers import EndpointReplayer, Replayer, endpoint_replayer, replayer
from evalcore.traffic.target import Target, refuse, resolve_target

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.embedding.embedder import Embedder
    from evalcore.progress import Progress
    from evalcore.store import Store

log = logging.getLogger(__name__)

SHOWN_PROBLEMS = 20
TABLES = ("traffic_queries", "traffic_texts", "traffic_hits", "traffic_labels", "traffic_imports")


# --- line identity ------------------------------------------------------------------------------


def line_key(line: LogLine) -> int:
    """A log line's identity without its position: 8 bytes of blake2b over its time and text
    (never its label; the trailing separator keeps the keys of lines stored before labels were
    left out)."""
    digest = hashlib.blake2b(f"{line.at.isoformat()}\0{line.text}\0".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Occurrences:
    """Occurrence numbers of line keys across a whole log (1 for the first time a key appears,
    2 for the second, ...), with 8 bytes of state per line: a sorted array of the keys seen."""

    def __init__(self) -> None:
        import numpy as np

        self.seen = np.zeros(0, dtype=np.int64)

    def number(self, keys: Sequence[int]) -> list[int]:
        import numpy as np

        arr = np.asarray(keys, dtype=np.int64)
        before = np.searchsorted(self.seen, arr, side="right") - np.searchsorted(self.seen, arr, side="left")
        order = np.argsort(arr, kind="stable")
        ranks = np.empty(len(arr), dtype=np.int64)
        sorted_keys = arr[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sorted_keys)) + 1] if len(arr) else np.zeros(0, np.int64)
        group_start = np.repeat(starts, np.diff(np.r_[starts, len(arr)]))
        ranks[order] = np.arange(len(arr)) - group_start
        self.seen = np.sort(np.concatenate([self.seen, arr]), kind="stable")
        return [int(x) for x in before + ranks + 1]


# --- import -----------------------------------------------------------------------------------


@dataclass
class ImportResult:
    """What an import did: lines read, stored now, stored before, problems (first 20 kept),
    lines stored before without a label that the log's label was added to."""

    run_id: str
    configuration: str
    source: str
    lines: int = 0
    added: int = 0
    already: int = 0
    problems: int = 0
    new_texts: int = 0
    labelled: int = 0
    shown: list[str] = field(default_factory=list)
    import_id: str | None = None
    seconds: float = 0.0
    embedding_seconds: float = 0.0
    retrieval_seconds: float = 0.0
    embedded: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "import_id": self.import_id,
            "run_id": self.run_id,
            "configuration": self.configuration,
            "source": self.source,
            "lines": self.lines,
            "added": self.added,
            "already": self.already,
            "problems": self.problems,
            "problem_lines": self.shown,
            "new_texts": self.new_texts,
            "labelled": self.labelled,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 3),
            "embedding_seconds": round(self.embedding_seconds, 3),
            "retrieval_seconds": round(self.retrieval_seconds, 3),
        }


def import_log(
    store: Store,
    reference: str,
    path: str | Path,
    fields: LogFields | None = None,
    fmt: str | None = None,
    *,
    embedder: Embedder | None = None,
    reranker_path: str | None = None,
    headers: Sequence[str] = (),
    progress: Progress | None = None,
    batch: int = BATCH,
    author: str | None = None,
) -> ImportResult:
    """Import the log at ``path`` into the traffic of ``reference`` (see the module docstring).
    InputError (nothing stored) when no line of the log is usable."""
    path = Path(path)
    fmt = infer_format(path, fmt)
    fields = fields or LogFields()
    target = resolve_target(store, reference)
    refuse(target)
    result = ImportResult(target.run_id, target.configuration.label, path.name)
    progress = progress or SilentProgress()
    total = count_lines(path, fmt) if path.is_file() else None
    progress.stage(Stage(f"traffic {target.configuration.label}", "lines", total or 0, 0.0, 1.0))
    occurrences = Occurrences()
    ready: Replayer | EndpointReplayer | None = None
    import_id = uuid.uuid4().hex[:12]
    started = False
    who = author if author is not None else os_author()
    t0 = time.perf_counter()
    try:
        for part in read_log(path, fmt, fields, batch):
            lines = [x for x in part if isinstance(x, LogLine)]
            for problem in (x for x in part if isinstance(x, LogProblem)):
                result.problems += 1
                if len(result.shown) < SHOWN_PROBLEMS:
                    result.shown.append(problem.describe())
            result.lines += len(part)
            if lines:
                keys = [line_key(x) for x in lines]
                occ = occurrences.number(keys)
                hashes = [text_hash(x.text) for x in lines]
                stored, have = _lookup(store, target, lines, occ, hashes)
                new, relabel = [], []
                for x, k, o, h in zip(lines, keys, occ, hashes, strict=True):
                    if (x.at, h, o) not in stored:
                        new.append((x, k, o, h))
                    elif x.label is not None and stored[(x.at, h, o)] is None:
                        relabel.append((x, o, h))
                result.already += len(lines) - len(new)
                texts = hits = None
                if new:

                    def ready_now() -> Replayer | EndpointReplayer:
                        nonlocal ready
                        if ready is None:  # loaded only once a text needs scoring
                            ready = (
                                endpoint_replayer(store, target, headers)
                                if target.info.source == "endpoint"
                                else replayer(store, target, embedder, reranker_path)
                            )
                        return ready

                    texts, hits = _score_new(target, ready_now, {h: x.text for x, _, _, h in new if h not in have})
                if new or relabel:
                    row = None if started else _import_row(target, import_id, path.name, fmt, who)
                    result.added += len(new)
                    result.labelled += len(relabel)
                    result.new_texts += 0 if texts is None else len(texts)
                    traffic_rows.write_batch(
                        store,
                        row,
                        _line_frame(target, import_id, new),
                        texts,
                        hits,
                        import_id,
                        _counts(result),
                        _label_frame(target, relabel),
                    )
                    started = True
                    testhooks.pause("traffic: batch written")
            progress.advance(len(part))
    except BaseException as exc:
        if started:
            _finish_import(store, import_id, result, "failed")
        if isinstance(exc, UnicodeDecodeError):
            raise InputError(f"{path}: {exc}") from None
        raise
    finally:
        progress.close()
    result.seconds = time.perf_counter() - t0
    if ready is not None:
        result.embedding_seconds = ready.clock["query_embedding"]
        result.retrieval_seconds = ready.clock["retrieval"]
        result.embedded = ready.embedded
    usable = result.added + result.already
    if usable == 0:
        first = f"; first: {result.shown[0]}" if result.shown else ""
        raise InputError(f"{path}: no usable line ({result.lines} read, {result.problems} with problems{first})")
    if started:
        result.import_id = import_id
        _finish_import(store, import_id, result, "complete")
    return result


def _lookup(
    store: Store, target: Target, lines: list[LogLine], occ: list[int], hashes: list[str], deployment: str = ""
) -> tuple[dict[tuple[datetime, str, int], str | None], set[str]]:
    """Which of a batch's lines are stored already for ``target`` and ``deployment`` (``""``:
    an imported log's), by their identity (time, text hash, occurrence), with the label stored
    for each; and which of its texts are scored already: both in one read-only connection. The
    identity is matched on stored columns, so lines stored by an earlier version (whose key
    hashed the label too) are recognised."""
    return stored_of_batch(store, target.key, [x.at for x in lines], hashes, occ, deployment)


def _score_new(
    target: Target, ready: Callable[[], Replayer | EndpointReplayer], unique: dict[str, str]
) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Rows of the texts not scored yet for ``target`` (``unique``: text hash -> text, each
    distinct text once) and their hits."""
    import numpy as np
    import pandas as pd

    todo = list(unique)
    if not todo:
        return None, None
    ids, dist, score, gate, failures = ready().score([unique[h] for h in todo])
    top = ids.shape[1]
    run_id, strategy, retriever = target.key
    text_rows = pd.DataFrame(
        {
            "run_id": run_id,
            "strategy": strategy,
            "retriever": retriever,
            "text_hash": todo,
            "text": [unique[h] for h in todo],
            "gate_value": gate,
            "failure": pd.Series([failures.get(i) for i in range(len(todo))], dtype=object),
        }
    )
    hit_rows = pd.DataFrame(
        {
            "run_id": run_id,
            "strategy": strategy,
            "retriever": retriever,
            "text_hash": np.repeat(np.asarray(todo, dtype=object), top),
            "rank": np.tile(np.arange(1, top + 1), len(todo)),
            "chunk_id": ids.ravel(),
            "distance": dist.ravel(),
            "score": score.ravel(),
        }
    )
    answered = ~(np.isnan(score.ravel()) & np.isnan(dist.ravel()))  # an endpoint may give fewer hits
    return text_rows, hit_rows[answered].reset_index(drop=True)


def _line_frame(
    target: Target, import_id: str, new: list[tuple[LogLine, int, int, str]], deployment: str = ""
) -> pd.DataFrame:
    """The rows of ``new`` lines for ``traffic_queries``: ``deployment`` is the deployment that
    posted them, ``""`` for an imported log's."""
    import pandas as pd

    run_id, strategy, retriever = target.key
    return pd.DataFrame(
        {
            "run_id": run_id,
            "strategy": strategy,
            "retriever": retriever,
            "deployment": deployment,
            "line_key": pd.Series([k for _, k, _, _ in new], dtype="int64"),
            "occurrence": [o for _, _, o, _ in new],
            "import_id": import_id,
            "line": [x.line for x, _, _, _ in new],
            "asked_at": pd.Series([x.at for x, _, _, _ in new], dtype="datetime64[us]"),
            "text_hash": [h for _, _, _, h in new],
            "label": pd.Series([x.label for x, _, _, _ in new], dtype=object),
        }
    )


def _label_frame(target: Target, relabel: list[tuple[LogLine, int, str]], deployment: str = "") -> pd.DataFrame | None:
    """Labels the log (or ``deployment``'s posts) gives to lines stored before without one:
    identity and label."""
    import pandas as pd

    if not relabel:
        return None
    run_id, strategy, retriever = target.key
    return pd.DataFrame(
        {
            "run_id": run_id,
            "strategy": strategy,
            "retriever": retriever,
            "deployment": deployment,
            "asked_at": pd.Series([x.at for x, _, _ in relabel], dtype="datetime64[us]"),
            "text_hash": [h for _, _, h in relabel],
            "occurrence": [o for _, o, _ in relabel],
            "label": [x.label for x, _, _ in relabel],
        }
    )


def _import_row(target: Target, import_id: str, source: str, fmt: str, author: str | None) -> dict[str, Any]:
    run_id, strategy, retriever = target.key
    return {
        "import_id": import_id,
        "run_id": run_id,
        "strategy": strategy,
        "retriever": retriever,
        "source": source,
        "format": fmt,
        "author": author,
        "status": "running",
        "started_at": now(),
        "host": socket.gethostname(),  # the reaper marks the import failed when this process is gone
        "pid": os.getpid(),
    }


def _counts(result: ImportResult) -> list[Any]:
    return [
        result.lines,
        result.added,
        result.already,
        result.problems,
        result.new_texts,
        json.dumps(result.shown),
    ]


def _finish_import(store: Store, import_id: str, result: ImportResult, status: str) -> None:
    try:
        traffic_rows.finish_import(store, import_id, status, _counts(result))
    except Exception as exc:
        if status == "complete":
            raise
        log.warning("could not mark traffic import %s %s: %s", import_id, status, exc)


# --- labels -------------------------------------------------------------------------------------


def set_label(store: Store, target: Target, text_hash: str, label: str | None, author: str | None) -> None:
    """Label one stored text (``answerable`` / ``off-topic``; None removes the label)."""
    if label is not None and label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, got {label!r}")
    traffic_rows.write_label(store, target.key, text_hash, label, author)
