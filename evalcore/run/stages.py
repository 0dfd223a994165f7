"""The work of one run, strategy by strategy: chunk, embed, retrieve, score (rows kept in memory)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.chunking import chunk_corpus
from evalcore.configurations import builtin_rows
from evalcore.embedding.embedder import WINDOW, normalisation_check
from evalcore.embedding.vector_cache import embed_with_cache
from evalcore.errors import Cancelled
from evalcore.progress import Progress, Scale, Stage
from evalcore.records import Chunk, Corpus, GroundTruth, Strategy
from evalcore.retrieval.names import split_retriever
from evalcore.retrieval.scored import score_queries
from evalcore.retrieval.sharded.driver import score_sharded
from evalcore.scoring import correct_sets, destroyed_cut
from evalcore.store.rows import document_rows, query_rows

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.embedding.embedder import Embedder
    from evalcore.embedding.models import Planned
    from evalcore.retrieval.rerank import Reranker
    from evalcore.store import Store


class Checked:
    """A Progress that also checks for a cancel after every advance (embedding batches)."""

    def __init__(self, progress: Progress, check: Callable[[], None]) -> None:
        self.inner, self.check = progress, check

    def stage(self, stage: Stage) -> None:
        self.inner.stage(stage)

    def advance(self, n: int = 1) -> None:
        self.inner.advance(n)
        self.check()

    def close(self) -> None:
        self.inner.close()


class Work:
    """The work of one run; collects result tables in memory."""

    def __init__(
        self,
        corpus: Corpus,
        ground_truth: GroundTruth,
        top_n: int,
        store: Store,
        embedder: Embedder,
        reranker: Reranker | None,
        retrievers: list[str],
        run_id: str,
        progress: Progress,
        cancelled: Callable[[], bool] | None,
        plan: list[Planned],
        ray: tuple[str, int | None] | None = None,
        device: str = "cpu",
    ) -> None:
        self.corpus, self.ground_truth, self.top_n = corpus, ground_truth, top_n
        self.device = device  # where the dense screening runs (cuda: on the GPU)
        self.store = store
        self.embedder = embedder  # the first model (documents are stamped with all of them)
        self.plan = plan
        self.ray = ray  # (address, shards): retrieval sharded on Ray actors
        self.reranker = reranker
        self.retrievers = retrievers
        self.run_id = run_id
        self.progress = Checked(progress, self._check)
        self.stage_name = "starting"
        self.started = False  # the run's row is in the store
        self.scale = Scale([p.strategy.name for p in plan])
        self.cancelled = cancelled or (lambda: False)
        self.new_embeddings = 0
        self.cached_embeddings = 0
        self.rows: dict[str, list[dict[str, Any]]] = {
            k: [] for k in ("documents", "strategies", "chunks", "queries", "destroyed", "timings")
        }
        self._pieces_cache: dict[str, int] = {}
        self.frames: dict[str, list[pd.DataFrame]] = {"results": [], "hits": []}

    # -- helpers -----------------------------------------------------------------
    def _check(self) -> None:
        if self.cancelled():
            raise Cancelled("cancelled by the user")

    def _stage(self, stage: Stage) -> None:
        self._check()
        self.stage_name = stage.name
        self.progress.stage(stage)
        testhooks.pause(stage.name)

    def _timing(self, stage: str, strategy: str | None, seconds: float, items: int) -> None:
        self.rows["timings"].append(
            {
                "run_id": self.run_id,
                "stage": stage,
                "strategy": strategy,
                "seconds": seconds,
                "items": items,
                "per_item_ms": (seconds * 1000.0 / items) if items else None,
            }
        )

    def _embed(self, texts: Sequence[str], embedder: Embedder) -> tuple[np.ndarray, Any]:

        vecs, st = embed_with_cache(embedder, texts, self.store, on_progress=self.progress.advance)
        self.new_embeddings += st.new
        self.cached_embeddings += st.cached
        return vecs, st

    def _header_pieces(self, header: str, embedder: Embedder) -> int:
        if not header:
            return 0
        key = f"{embedder.name}\0{header}"
        if key not in self._pieces_cache:
            # pieces the header adds: its own pieces without [CLS]/[SEP]
            self._pieces_cache[key] = embedder.count_pieces([header.rstrip("\n")])[0] - 2
        return self._pieces_cache[key]

    # -- the run -----------------------------------------------------------------
    def execute(self) -> dict[str, pd.DataFrame]:
        import pandas as pd

        gt = self.ground_truth
        self._record_documents()
        self._record_queries()
        in_q = list(gt.valid_questions)
        texts = [q.question for q in in_q] + [q.query for q in gt.ood]
        qids = [q.query_id for q in in_q] + [q.query_id for q in gt.ood]
        n_in = len(in_q)
        groups = [q.group for q in in_q]

        qvecs = {}
        for embedder in {p.embedder.name: p.embedder for p in self.plan}.values():
            self._stage(self.scale.query_embedding(len(texts)))
            qvecs[embedder.name], st = self._embed(texts, embedder)
            self._timing("query_embedding", None, st.seconds, st.new)

        for item in self.plan:
            self._run_strategy(
                item.strategy, qvecs[item.embedder.name], qids, texts, n_in, groups, item.embedder, item.chunker
            )

        self.rows["configurations"] = builtin_rows(
            self.run_id, [(p.strategy.name, p.chunker, p.embedder.name) for p in self.plan], self.retrievers
        )
        frames = {k: pd.DataFrame(v) for k, v in self.rows.items() if k not in self.frames}
        for name, parts in self.frames.items():
            frames[name] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return frames

    def _record_documents(self) -> None:

        names = list(dict.fromkeys(p.embedder.name for p in self.plan))
        dims = {p.embedder.dim for p in self.plan}
        self.rows["documents"] += document_rows(
            self.run_id, self.corpus, ", ".join(names), dims.pop() if len(dims) == 1 else None
        )

    def _record_queries(self) -> None:

        self.rows["queries"] += query_rows(self.run_id, self.ground_truth)

    def _run_strategy(
        self,
        strategy: Strategy,
        qvec: np.ndarray,
        qids: list[str],
        qtexts: list[str],
        n_in: int,
        groups: list[str],
        embedder: Embedder,
        chunker: str,
    ) -> None:

        name = strategy.name
        self._stage(self.scale.strategy(name, "chunking", len(self.corpus.documents)))
        t0 = time.perf_counter()
        chunks: list[Chunk] = chunk_corpus(self.corpus, strategy)
        self._timing("chunking", name, time.perf_counter() - t0, len(chunks))
        self.progress.advance(len(self.corpus.documents))
        ctexts = [c.text for c in chunks]

        pieces = embedder.count_pieces(ctexts)
        header_pieces = [self._header_pieces(c.header, embedder) for c in chunks]

        self._stage(self.scale.strategy(name, "embedding", len(chunks)))
        cvec, st = self._embed(ctexts, embedder)
        self._timing("index", name, st.seconds, st.new)

        spans = self.ground_truth.spans
        correct = correct_sets(chunks, spans)
        destroyed = sorted(g for g, ids in correct.items() if len(ids) == 0)
        for g in destroyed:
            s = spans[g]
            self.rows["destroyed"].append(
                {
                    "run_id": self.run_id,
                    "strategy": name,
                    "group_id": g,
                    "doc_id": s.doc_id,
                    "start": s.start,
                    "end": s.end,
                    "cut": destroyed_cut(chunks, s),
                }
            )
        self.rows["strategies"].append(
            {
                "run_id": self.run_id,
                "strategy": name,
                "size": strategy.size,
                "overlap": strategy.overlap,
                "boundaries": strategy.boundaries,
                "header": strategy.header,
                "chunks": len(chunks),
                "pieces": int(sum(pieces)),
                "header_pieces": int(sum(header_pieces)),
                "over_window": int(sum(p > getattr(embedder, "window", WINDOW) for p in pieces)),
                "destroyed": len(destroyed),
                "norm_max_diff": normalisation_check(cvec, 200),
                "chunker": chunker,
                "model": embedder.name,
            }
        )
        for i, c in enumerate(chunks):
            self.rows["chunks"].append(
                {
                    "run_id": self.run_id,
                    "strategy": name,
                    "chunk_id": i,
                    "doc_id": c.doc_id,
                    "section": c.section,
                    "start": c.start,
                    "end": c.end,
                    "evidence_start": c.evidence_start,
                    "header": c.header,
                    "content": c.content,
                    "text": c.text,
                    "pieces": pieces[i],
                    "header_pieces": header_pieces[i],
                }
            )
        if not chunks:
            return

        self._stage(self.scale.strategy(name, "retrieval and scoring", len(qids)))
        self._retrieve(name, chunks, cvec, qvec, qids, qtexts, n_in, groups, correct)

    def _retrieve(
        self,
        name: str,
        chunks: list[Chunk],
        cvec: np.ndarray,
        qvec: np.ndarray,
        qids: list[str],
        qtexts: list[str],
        n_in: int,
        groups: list[str],
        correct: dict[str, np.ndarray],
    ) -> None:
        import numpy as np

        empty = np.zeros(0, dtype=np.int64)
        per_query = [correct[groups[qi]] if qi < len(groups) else empty for qi in range(len(qids))]
        rerank: Callable[[str, np.ndarray], list[float]] | None = None
        reranker = self.reranker
        if reranker is not None and any(split_retriever(r)[0] == "rerank" for r in self.retrievers):

            def rerank(query: str, ids: np.ndarray) -> list[float]:
                return reranker.score(query, [chunks[j].text for j in ids])

        def on_block(done: int) -> None:
            self._check()
            self.progress.advance(done)

        score: Callable[..., Any] = partial(score_queries, device=self.device)
        if self.ray is not None:
            score = partial(score_sharded, *self.ray)
        scored = score(
            self.run_id,
            name,
            [c.text for c in chunks],
            cvec,
            qvec,
            qids,
            qtexts,
            per_query,
            n_in,
            self.retrievers,
            self.top_n,
            rerank=rerank,
            on_block=on_block,
        )
        self.frames["results"] += scored.results
        self.frames["hits"] += scored.hits
        for stage, seconds in scored.clock.items():
            items = len(chunks) if stage.startswith("bm25_build") else len(qids)
            self._timing(stage, name, seconds, items)
