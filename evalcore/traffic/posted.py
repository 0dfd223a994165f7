"""The replay of a deployment's posted queries: the job runner's ``traffic`` job.

The job (queued by :func:`evalcore.service.ingest.ingest_traffic`) takes the deployment's
pending lines a batch at a time, in arrival order, and scores them against the configuration
the deployment points at when the job runs, exactly as ``traffic import`` scores a log's lines
(:mod:`evalcore.traffic.replay`: the same replayer, the same tables). The job is one traffic
import, its source ``deployment NAME``, so the Traffic screen shows its progress and results
like an imported log's. A line's identity is its deployment, its time, its text and its
occurrence among the deployment's posted lines with that time and text (stored as
``traffic_queries.deployment``, migration 0014), so a replay interrupted and run again adds
nothing twice, and two deployments on one configuration that post the same text at the same
time (each under its own ids) both have every line counted: identity is never shared between
two deployments, nor with an imported log. Once a batch is stored its lines' texts are cleared
from ``traffic_posted``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from evalcore.embedding.embedder import text_hash
from evalcore.errors import Cancelled, UnknownDeployment
from evalcore.records import Configuration
from evalcore.store import deployments
from evalcore.store.traffic import imported as traffic_rows
from evalcore.store.traffic import posted as traffic_posted
from evalcore.traffic import replay as r
from evalcore.traffic.log import LogLine
from evalcore.traffic.replayers import endpoint_replayer, replayer
from evalcore.traffic.target import refuse, resolve_target

if TYPE_CHECKING:
    from evalcore.store import Store
    from evalcore.traffic.replay import ImportResult
    from evalcore.traffic.replayers import EndpointReplayer, Replayer

BATCH = 1024
FORMAT = "jsonl"


def source_of(deployment: str) -> str:
    """The import source the Traffic screen shows for a deployment's posted traffic."""
    return f"deployment {deployment}"


def replay_posted(
    store: Store,
    deployment: str,
    *,
    author: str | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_step: Callable[[str], None] | None = None,
    batch: int = BATCH,
) -> ImportResult | None:
    """Score every pending line of ``deployment`` into the traffic of its configuration; the
    import's result, or None when nothing was pending."""
    found = deployments.pointed_at(store, deployment)
    if found is None:
        raise UnknownDeployment(f"no deployment {deployment!r} in this store")
    run_id, strategy, retriever = found
    target = resolve_target(store, f"{run_id}:{Configuration(strategy, retriever).label}")
    refuse(target)
    result = r.ImportResult(target.run_id, target.configuration.label, source_of(deployment))
    import_id = uuid.uuid4().hex[:12]
    ready: Replayer | EndpointReplayer | None = None
    started = False

    def ready_now() -> Replayer | EndpointReplayer:
        nonlocal ready
        if ready is None:
            ready = (
                endpoint_replayer(store, target, ())
                if target.info.source == "endpoint"
                else replayer(store, target, None, None)
            )
        return ready

    try:
        while rows := traffic_posted.pending(store, deployment, batch):
            if cancelled is not None and cancelled():
                raise Cancelled(f"replay of deployment {deployment} cancelled")
            if on_step is not None:
                on_step(f"replaying {len(rows)} posted lines ({result.lines} done)")
            lines = [LogLine(int(seq), at, str(text), label) for _, seq, at, _, text, label, _ in rows]
            occ = [int(row[6]) for row in rows]
            hashes = [text_hash(x.text) for x in lines]
            stored, have = r._lookup(store, target, lines, occ, hashes, deployment)
            new, relabel = [], []
            for x, o, h in zip(lines, occ, hashes, strict=True):
                if (x.at, h, o) not in stored:
                    new.append((x, r.line_key(x), o, h))
                elif x.label is not None and stored[(x.at, h, o)] is None:
                    relabel.append((x, o, h))
            result.lines += len(lines)
            result.already += len(lines) - len(new)
            texts, hits = r._score_new(target, ready_now, {h: x.text for x, _, _, h in new if h not in have})
            result.added += len(new)
            result.labelled += len(relabel)
            result.new_texts += 0 if texts is None else len(texts)
            row = None if started else r._import_row(target, import_id, source_of(deployment), FORMAT, author)
            traffic_rows.write_batch(
                store,
                row,
                r._line_frame(target, import_id, new, deployment),
                texts,
                hits,
                import_id,
                r._counts(result),
                r._label_frame(target, relabel, deployment),
            )
            started = True
            traffic_posted.mark_replayed(store, deployment, [str(p[0]) for p in rows], import_id)
    except BaseException:
        if started:
            r._finish_import(store, import_id, result, "failed")
        raise
    if not started:
        return None
    if ready is not None:
        result.embedding_seconds = ready.clock["query_embedding"]
        result.retrieval_seconds = ready.clock["retrieval"]
        result.embedded = ready.embedded
    result.import_id = import_id
    r._finish_import(store, import_id, result, "complete")
    return result
