"""Retrieval sharded on Ray: a strategy's chunks split into shards held by Ray actors, with
the same ranks, hits and figures as the one-machine path (:func:`evalcore.retrieval.scored.score_queries`).

``python -m evalcore run ... --ray ADDRESS [--shards N]`` (or ``--ray local``). The chunk ids
are cut into ``N`` contiguous ranges; each range is one :class:`evalcore.retrieval.sharded.shard.Shard`
actor holding its float32 vectors and its BM25 postings. The driver streams vectors and texts
to the actors a block at a time and keeps neither.

**BM25 with global statistics.** Each actor counts the words of its texts and reports them in
order of first appearance; the driver numbers the terms globally in that order (shard by shard,
so the same ids :meth:`~evalcore.retrieval.bm25.BM25.build` gives over the whole corpus;
a stemming analyzer's stems are numbered from the global words as it does), sums the document
frequencies and computes ``idf`` and the average length once, and every actor weights its
postings with them. A query's score for a chunk is then summed over the same terms in the same
order with the same weights: the same float as on one machine.

**The protocol, per block of queries** (see :mod:`evalcore.retrieval.sharded.merge`):

1. *scan*: every actor returns its top ``L`` chunks of the dense order and of each BM25 order
   (ids, float64 distances, BM25 scores; ``L`` is the hit count, or ``max(8D, 1024)`` with
   hybrid, ``D = 2K + 60`` the fusion depth), its number of BM25-matched chunks, and the distance
   and scores of the correct chunks it holds. The driver merges the lists: the first ``L`` of
   the merged list are the global top ``L``, with exact global ranks.
2. *count*: for each chunk whose global rank the driver still needs (the first correct chunk of
   dense and of BM25; for hybrid every correct chunk and each candidate of the two top-``D``
   lists that lies deeper than ``L`` in the other order), the driver sends ``(value, chunk id)``
   and every actor counts its chunks that beat it (ties by chunk order); a rank is one plus the
   sum. The hybrid top hits are then the exact RRF order of the candidates, and the first correct
   chunk's hybrid rank is counted among them whenever it fuses above ``2 / (61 + D)``.
3. *dump*, only for a query whose first correct chunk fuses below that bound: every actor sends
   the exact distance of each of its chunks and the scores of its matched ones, and the driver
   ranks every chunk (memory and traffic of one float per chunk for that query).

Top hits are merged by the retriever's order (distance, or score, then chunk id); ranks add the
actors' counts. Rerank re-sorts the merged hybrid head on the driver, as on one machine.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.embedding.distributed import connect
from evalcore.errors import ClusterError
from evalcore.retrieval.bm25 import BM25, Analyzer
from evalcore.retrieval.names import analyzers_of, split_retriever
from evalcore.retrieval.ranking import SHARD_BLOCK_BYTES, block_queries
from evalcore.retrieval.scored import Scored, block_frames
from evalcore.retrieval.sharded.merge import Plan, rank_block_sharded
from evalcore.retrieval.sharded.shard import Shard

log = logging.getLogger(__name__)

SHARDS_PER_CPU = 2  # the most shards (actors) a run puts on one CPU of the cluster
MIN_CAP = 4  # ... but a small cluster may always hold this many

if TYPE_CHECKING:
    import numpy as np

VECTOR_BLOCK = 65536  # rows of vectors sent to an actor at a time
TEXT_BLOCK = 20000  # chunk texts sent to an actor at a time


@dataclass
class ShardedScored(Scored):
    """:class:`~evalcore.retrieval.scored.Scored`, and each actor's peak resident memory (MB)."""

    peak_rss_mb: list[float] = field(default_factory=list)
    shard_sizes: list[int] = field(default_factory=list)


def split(n: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous ranges ``(offset, size)`` of ``n`` chunk ids, sizes within one."""
    shards = max(1, min(shards, n)) if n else 1
    base, extra = divmod(n, shards)
    out, at = [], 0
    for s in range(shards):
        size = base + (1 if s < extra else 0)
        out.append((at, size))
        at += size
    return out


def default_shards() -> int:
    """One shard per node of the cluster, at least two."""
    import ray

    return max(2, len([n for n in ray.nodes() if n.get("Alive")]))  # type: ignore[no-untyped-call]  # ray leaves it unannotated


def shard_count(asked: int | None, n: int) -> int:
    """The shards a strategy of ``n`` chunks gets on the connected cluster: ``asked`` (default
    one per node, at least two), at most ``SHARDS_PER_CPU`` per CPU of the cluster (at least
    ``MIN_CAP``: each shard is an actor, a process of its own) and one per chunk. A cut of an
    asked number is logged with its reason."""
    import ray

    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]  # ray leaves it unannotated
    wanted = asked or default_shards()
    cap = max(MIN_CAP, SHARDS_PER_CPU * cpus)
    used = max(1, min(wanted, cap, n or 1))
    if asked and used < asked:
        why = f"the cluster has {cpus} CPUs, {cap} shards at most" if used == cap else f"the strategy has {n} chunks"
        log.warning("--shards %d: %d shards used (%s)", asked, used, why)
    return used


def _blocks(vectors: np.ndarray | Iterable[np.ndarray]) -> Iterator[np.ndarray]:
    import numpy as np

    if isinstance(vectors, np.ndarray):
        for b0 in range(0, len(vectors), VECTOR_BLOCK):
            yield np.asarray(vectors[b0 : b0 + VECTOR_BLOCK], dtype=np.float32)
    else:
        for part in vectors:
            yield np.asarray(part, dtype=np.float32)


class Shards:
    """The actors of one strategy's chunks: started, loaded, indexed; :meth:`close` ends them."""

    def __init__(self, n: int, dim: int, shards: int) -> None:
        import ray

        self.ranges = split(n, shards)
        self.n, self.dim = n, dim
        cpus = float(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]  # ray leaves it unannotated
        actor = ray.remote(Shard).options(num_cpus=max(0.01, cpus / len(self.ranges)))
        self.actors: list[Any] = [actor.remote(off, size, dim) for off, size in self.ranges]
        self.cmax = 0.0

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []

    def _owner(self, chunk: int) -> int:
        for s, (off, size) in enumerate(self.ranges):
            if chunk < off + size:
                return s
        return len(self.ranges) - 1

    def load_vectors(self, vectors: np.ndarray | Iterable[np.ndarray]) -> None:
        """Stream the vectors (an array, or blocks of rows in chunk order) to their shards."""
        import ray

        at, pending = 0, []
        for part in _blocks(vectors):
            p0 = 0
            while p0 < len(part):
                s = self._owner(at)
                off, size = self.ranges[s]
                take = min(len(part) - p0, off + size - at)
                pending.append(self.actors[s].put_vectors.remote(at - off, part[p0 : p0 + take]))
                at, p0 = at + take, p0 + take
            if len(pending) > 4:
                ray.get(pending)
                pending = []
        ray.get(pending)
        if at != self.n:
            raise ValueError(f"{at} vectors for {self.n} chunks")
        self.cmax = max([float(x) for x in ray.get([a.max_norm.remote() for a in self.actors])] or [0.0])

    def load_texts(self, texts: Iterable[str]) -> None:
        """Stream the chunk texts (read once, in chunk order) to their shards."""
        import ray

        at, pending = 0, []
        buf: list[str] = []
        s = 0
        for text in texts:
            while s < len(self.ranges) - 1 and at >= sum(self.ranges[s]):
                if buf:
                    pending.append(self.actors[s].put_texts.remote(buf))
                    buf = []
                s += 1
            buf.append(text)
            at += 1
            if len(buf) >= TEXT_BLOCK:
                pending.append(self.actors[s].put_texts.remote(buf))
                buf = []
        if buf:
            pending.append(self.actors[s].put_texts.remote(buf))
        ray.get(pending)

    def build_bm25(self, analyzer: str) -> None:
        """Every shard's BM25 index for ``analyzer``, weighted with the global statistics."""
        import numpy as np
        import ray

        words = ray.get([a.words.remote(analyzer) for a in self.actors])
        vocab: dict[str, int] = {}
        for ws in words:
            for w in ws:
                vocab.setdefault(w, len(vocab))
        analyze = Analyzer(analyzer)
        if analyze.stems:  # stems numbered in the words' order of first appearance, as BM25.build
            stems: dict[str, int] = {}
            word_term = np.fromiter(
                (stems.setdefault(s, len(stems)) for s in analyze.stem(list(vocab))), dtype=np.int32, count=len(vocab)
            )
            terms = stems
        else:
            word_term, terms = np.arange(len(vocab), dtype=np.int32), vocab
        calls = []
        for a, ws in zip(self.actors, words, strict=True):
            local = word_term[np.fromiter((vocab[w] for w in ws), np.int64, len(ws))]
            calls.append(a.terms.remote(analyzer, local, len(terms), analyze.stems))
        del words
        got = ray.get(calls)
        df = np.sum([g[0] for g in got], axis=0).astype(np.float64) if got else np.zeros(len(terms))
        lengths = np.concatenate([g[1] for g in got]) if got else np.zeros(0)
        n = len(lengths)
        avg = float(lengths.mean()) if n else 0.0
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        params = inspect.signature(BM25.build).parameters
        k1, b = float(params["k1"].default), float(params["b"].default)
        vocab_ref, idf_ref = ray.put(terms), ray.put(idf)
        ray.get([a.build.remote(analyzer, vocab_ref, idf_ref, avg, k1, b) for a in self.actors])

    def peaks(self) -> list[float]:
        import ray

        return [round(float(x), 1) for x in ray.get([a.peak_rss_mb.remote() for a in self.actors])]


def score_sharded(
    address: str,
    shards: int | None,
    run_id: str,
    strategy: str,
    chunk_texts: Iterable[str],
    cvec: np.ndarray | Iterable[np.ndarray],
    qvec: np.ndarray,
    qids: Sequence[str],
    qtexts: Sequence[str],
    correct: Sequence[np.ndarray],
    n_in: int,
    retrievers: Sequence[str],
    top_n: int,
    rerank: Callable[[str, np.ndarray], Sequence[float]] | None = None,
    on_block: Callable[[int], None] | None = None,
    n_chunks: int | None = None,
) -> ShardedScored:
    """:func:`~evalcore.retrieval.scored.score_queries` on Ray actors (module docstring): the
    same frames. ``cvec`` is an array or blocks of rows in chunk order (then ``n_chunks`` says
    how many); ``shards`` defaults to one per node (at least two)."""
    import numpy as np
    import ray

    connect(address)
    n = len(cvec) if isinstance(cvec, np.ndarray) else n_chunks
    if n is None:
        raise ValueError("n_chunks is required when the vectors come in blocks")
    dim = qvec.shape[1]
    out = ShardedScored()
    retrievers = [r for r in retrievers if split_retriever(r)[0] != "rerank" or rerank is not None]
    wanted = analyzers_of(retrievers)
    tick = time.perf_counter
    t0 = tick()
    group = Shards(n, dim, shard_count(shards, n))
    try:
        group.load_vectors(cvec)
        if wanted:
            group.load_texts(chunk_texts)
        out.clock["shard_load"] = tick() - t0
        testhooks.pause("retrieval: shards loaded")  # a test kills a shard's worker here
        for analyzer in wanted:
            t = tick()
            group.build_bm25(analyzer)
            out.clock["bm25_build" if not analyzer else f"bm25_build:{analyzer}"] = tick() - t
        ray.get([a.drop_texts.remote() for a in group.actors])
        plan = Plan.of(retrievers, top_n, n, rerank is not None)
        largest = max(size for _, size in group.ranges)
        block = block_queries(largest * (1 + 2 * len(wanted)), SHARD_BLOCK_BYTES)
        clock = {"shard_scan": 0.0, "shard_count": 0.0, "merge": 0.0}
        if plan.reranks:
            clock["rerank"] = 0.0
        nq = len(qids)
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            scorer = None if rerank is None else (lambda i, ids, _b0=b0: rerank(qtexts[_b0 + i], ids))
            ranked = rank_block_sharded(
                group.actors, plan, qvec[b0:b1], qtexts[b0:b1], correct[b0:b1], group.cmax, scorer, clock
            )
            results, hits = block_frames(
                run_id, strategy, ranked, qids[b0:b1], np.arange(b0, b1) < n_in, correct[b0:b1]
            )
            out.results += results
            out.hits += hits
            if on_block is not None:
                on_block(b1 - b0)
        out.clock.update(clock)
        out.peak_rss_mb = group.peaks()
        out.shard_sizes = [size for _, size in group.ranges]
    except ray.exceptions.RayError as exc:
        if isinstance(exc, ray.exceptions.RayTaskError):  # a shard's own code raised: not the cluster's doing
            raise
        raise lost(exc, run_id, strategy, group) from exc
    finally:
        group.close()
    return out


def lost(exc: BaseException, run_id: str, strategy: str, group: Shards) -> ClusterError:
    """The run's failure when Ray lost what it needed (a shard's worker process killed or
    crashed, its node gone, an object lost): which shard, if Ray says, and Ray's first line."""
    said = str(exc).strip().splitlines()
    first = " ".join(said[0].split())[:200] if said else type(exc).__name__
    actor = getattr(exc, "actor_id", None)
    ids = [_actor_id(a) for a in group.actors]
    which = f"shard {ids.index(actor) + 1} of {len(ids)}" if actor and actor in ids else f"one of {len(ids)} shards"
    pid = next((line.split(":", 1)[1].strip() for line in said if line.strip().startswith("pid:")), "")
    return ClusterError(
        f"run {run_id}: Ray lost {which} during retrieval of strategy {strategy} "
        f"({type(exc).__name__}{', worker pid ' + pid if pid else ''}): {first}"
    )


def _actor_id(actor: Any) -> str | None:
    """An actor handle's id as Ray's errors write it (hex), or None."""
    try:
        return str(actor._actor_id.hex())
    except AttributeError:
        return None
