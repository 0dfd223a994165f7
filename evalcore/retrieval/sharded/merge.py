"""The driver's side of sharded retrieval: merge the shards' answers for a block of queries into
the :class:`~evalcore.retrieval.ranking.Ranked` rows the one-machine engine gives (the protocol
is in :mod:`evalcore.retrieval.sharded.driver`).

Hybrid is RRF of the dense order and the BM25 order of the matched chunks, ties by chunk id, as
in :mod:`evalcore.retrieval.ranking`: the top ``K`` lie among the candidates (the two top-``D``
lists, ``D = 2K + 60``); a candidate's rank in an order is exact when it lies within the merged
top ``L`` of that order and is otherwise counted by the shards (one round for the block). The
fused score is ``1/(60 + rank_dense) + 1/(60 + rank_bm25)`` (the second term for matched chunks
only), the same float64 expression as there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.retrieval.hybrid import RRF_K
from evalcore.retrieval.names import analyzers_of, retriever_name
from evalcore.retrieval.ranking import Ranked
from evalcore.retrieval.rerank import RERANK_DEPTH, rerank_order

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def _rrf(rank: Any) -> NDArray[np.float64]:
    """1 / (60 + rank) in float64 (the expression of the one-machine engine)."""
    import numpy as np

    return 1.0 / (RRF_K + np.asarray(rank, dtype=np.float64))


def _fused(rd: np.ndarray, rb: np.ndarray, matched: np.ndarray) -> NDArray[np.float64]:
    import numpy as np

    return _rrf(rd) + np.where(matched, _rrf(np.maximum(rb, 1)), 0.0)


def _positions(order: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """1-based position of each of ``ids`` in ``order`` (0 where absent)."""
    import numpy as np

    ids = np.asarray(ids, dtype=np.int64)
    if not len(order):
        return np.zeros(len(ids), dtype=np.int64)
    by_id = np.argsort(order, kind="stable")
    pos = np.minimum(np.searchsorted(order[by_id], ids), len(order) - 1)
    return np.where(order[by_id][pos] == ids, by_id[pos] + 1, 0).astype(np.int64)


class _Lookup:
    """A value per chunk id, from several (ids, values) lists that agree where they overlap."""

    def __init__(self, ids: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        import numpy as np

        all_ids = np.concatenate([np.asarray(x, dtype=np.int64) for x in ids])
        self.ids, first = np.unique(all_ids, return_index=True)
        self.values = np.concatenate([np.asarray(v, dtype=np.float64) for v in values])[first]

    def __call__(self, want: np.ndarray) -> NDArray[np.float64]:
        import numpy as np

        at = np.searchsorted(self.ids, want)
        out: NDArray[np.float64] = self.values[at]
        return out


@dataclass(frozen=True)
class Analyzed:
    """What one BM25 analyzer's retrievers need: names, hybrid depth ``k`` and fusion depth ``D``."""

    analyzer: str
    bm25: str | None
    hybrid: str | None  # the public hybrid's name, or a private one the rerank reads
    rerank: str | None
    k: int
    depth: int  # D
    listed: int  # L: chunks each shard lists of this BM25 order


@dataclass(frozen=True)
class Plan:
    retrievers: tuple[str, ...]
    top: int
    n: int
    dense: bool
    analyzed: tuple[Analyzed, ...]

    @property
    def dense_depth(self) -> int:
        return max([self.top, *(a.listed for a in self.analyzed if a.hybrid)])

    @property
    def bm25_depth(self) -> dict[str, int]:
        return {a.analyzer: a.listed for a in self.analyzed}

    @property
    def reranks(self) -> bool:
        return any(a.rerank for a in self.analyzed)

    @classmethod
    def of(cls, retrievers: Sequence[str], top_n: int, n: int, can_rerank: bool) -> Plan:
        top = min(top_n, n)
        out = []
        for analyzer in analyzers_of(retrievers):
            nb25, nhy, nrr = (retriever_name(b, analyzer) for b in ("bm25", "hybrid", "rerank"))
            want_rr = nrr in retrievers and can_rerank
            want_hy = nhy in retrievers or want_rr
            if not (want_hy or nb25 in retrievers):
                continue
            k = min(n, max(top, RERANK_DEPTH) if want_rr else top)
            depth = min(n, 2 * k + RRF_K)
            listed = min(n, max(8 * depth, 1024)) if want_hy else top
            hy = (nhy if nhy in retrievers else "\0" + nhy) if want_hy else None
            out.append(
                Analyzed(analyzer, nb25 if nb25 in retrievers else None, hy, nrr if want_rr else None, k, depth, listed)
            )
        return cls(tuple(retrievers), top, n, "dense" in retrievers, tuple(out))


class _Query:
    """One query's merged shard answers, the ranks it still needs, and its results."""

    def __init__(self, i: int, scans: list[dict[str, Any]], plan: Plan) -> None:
        import numpy as np

        self.plan, n = plan, plan.n
        ids = np.concatenate([s["d_ids"][i] for s in scans])
        dist = np.concatenate([s["d_dist"][i] for s in scans])
        o = np.lexsort((ids, dist))[: min(plan.dense_depth, n)]
        self.gd, self.gdd = ids[o], dist[o]
        self.c_ids = np.concatenate([s["c_ids"][i] for s in scans]).astype(np.int64)
        self.c_dist = np.concatenate([s["c_dist"][i] for s in scans])
        dist_lists, dist_ids = [self.gdd, self.c_dist], [self.gd, self.c_ids]
        self.gb: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.m: dict[str, int] = {}
        self.score: dict[str, _Lookup] = {}
        self.c_score: dict[str, np.ndarray] = {}
        for a in plan.analyzed:
            name = a.analyzer
            parts = [s["b"][name] for s in scans]
            b_ids = np.concatenate([p["ids"][i] for p in parts])
            b_sc = np.concatenate([p["score"][i] for p in parts])
            b_dist = np.concatenate([p["dist"][i] for p in parts])
            ob = np.lexsort((b_ids, -b_sc))[: min(a.listed, n)]
            self.gb[name] = (b_ids[ob], b_sc[ob], b_dist[ob])
            self.m[name] = int(sum(int(p["m"][i]) for p in parts))
            self.c_score[name] = np.concatenate([s["c_score"][name][i] for s in scans])
            d_sc = np.concatenate([s["d_score"][name][i] for s in scans])[o]
            self.score[name] = _Lookup([self.gd, b_ids[ob], self.c_ids], [d_sc, b_sc[ob], self.c_score[name]])
            dist_lists.append(b_dist[ob])
            dist_ids.append(b_ids[ob])
        self.dist = _Lookup(dist_ids, dist_lists)
        self.rank_d: dict[int, int] = {}
        self.rank_b: dict[str, dict[int, int]] = {a.analyzer: {} for a in plan.analyzed}
        self.want_d: set[int] = set()
        self.want_b: dict[str, set[int]] = {a.analyzer: set() for a in plan.analyzed}
        self.hy: dict[str, dict[str, Any]] = {}
        self.deep: dict[str, tuple[float, int]] = {}
        self._ask()

    # -- which ranks the shards must count ---------------------------------------------
    def _ask(self) -> None:
        import numpy as np

        has = len(self.c_ids) > 0
        if has and self.plan.dense:
            best = int(self.c_ids[np.lexsort((self.c_ids, self.c_dist))[0]])
            self.want_d.add(best)
        for a in self.plan.analyzed:
            name = a.analyzer
            if has and a.bm25:
                best = int(self.c_ids[np.lexsort((self.c_ids, -self.c_score[name]))[0]])
                self.want_b[name].add(best)
            if a.hybrid:
                self._hybrid_ask(a)
        want_d = np.fromiter(self.want_d, np.int64, len(self.want_d))
        self.want_d -= set(want_d[_positions(self.gd, want_d) > 0].tolist())
        for a in self.plan.analyzed:
            gb = self.gb[a.analyzer][0]
            want = np.fromiter(self.want_b[a.analyzer], np.int64, len(self.want_b[a.analyzer]))
            self.want_b[a.analyzer] -= set(want[_positions(gb, want) > 0].tolist())

    def _hybrid_ask(self, a: Analyzed) -> None:
        import numpy as np

        name, n = a.analyzer, self.plan.n
        gb_ids, gb_sc, _ = self.gb[name]
        gbm = gb_ids[gb_sc > 0]
        cand = np.union1d(self.gd[: a.depth], gbm[: a.depth])
        h: dict[str, Any] = {"cand": cand, "gbm": gbm, "matched": self.score[name](cand) > 0}
        rd, rb = _positions(self.gd, cand), _positions(gbm, cand)
        h["rd_lo"] = np.where(rd > 0, rd, len(self.gd) + 1)
        h["rd_hi"] = np.where(rd > 0, rd, n)
        h["rb_lo"] = np.where(rb > 0, rb, len(gbm) + 1)
        h["rb_hi"] = np.where(rb > 0, rb, max(self.m[name], 1))
        out_b = _rrf(a.depth + 1) if self.m[name] > a.depth else 0.0
        h["outside"] = float(_rrf(a.depth + 1) + out_b) if a.depth < n else -1.0
        d_open = h["rd_lo"] != h["rd_hi"]
        b_open = h["matched"] & (h["rb_lo"] != h["rb_hi"])
        lo = _fused(h["rd_hi"], h["rb_hi"], h["matched"])
        hi = _fused(h["rd_lo"], h["rb_lo"], h["matched"])
        kk = min(a.k, len(cand))
        need = hi >= np.partition(lo, len(lo) - kk)[len(lo) - kk]  # may be in the top k
        if len(self.c_ids):
            # and may beat the first correct chunk, whose fused score f* lies in [fs_lo, fs_hi]
            m = self.c_score[name] > 0
            c_rd, c_rb = _positions(self.gd, self.c_ids), _positions(gbm, self.c_ids)
            f_lo = _fused(np.where(c_rd > 0, c_rd, n), np.where(c_rb > 0, c_rb, max(self.m[name], 1)), m)
            f_hi = _fused(np.where(c_rd > 0, c_rd, len(self.gd) + 1), np.where(c_rb > 0, c_rb, len(gbm) + 1), m)
            fs_lo, fs_hi = float(f_lo.max()), float(f_hi.max())
            if fs_hi > h["outside"]:  # else the first rank comes from a dump of every chunk
                need |= (hi >= fs_lo) & (lo <= fs_hi)
        d_open, b_open = d_open & need, b_open & need
        self.want_d.update(cand[d_open].tolist())
        self.want_b[name].update(cand[b_open].tolist())
        self.want_d.update(self.c_ids.tolist())
        self.want_b[name].update(self.c_ids[self.c_score[name] > 0].tolist())
        self.hy[name] = h

    def probes_d(self) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        ids = np.fromiter(sorted(self.want_d), np.int64, len(self.want_d))
        return self.dist(ids), ids

    def probes_b(self, analyzer: str) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        want = self.want_b[analyzer]
        ids = np.fromiter(sorted(want), np.int64, len(want))
        return self.score[analyzer](ids), ids

    def counted(self, dense: np.ndarray, bm25: dict[str, np.ndarray]) -> None:
        """The shards' summed counts for the probes (rank = count + 1)."""
        self.rank_d.update(zip(sorted(self.want_d), (int(c) + 1 for c in dense), strict=True))
        for name, counts in bm25.items():
            self.rank_b[name].update(zip(sorted(self.want_b[name]), (int(c) + 1 for c in counts), strict=True))

    def _rd(self, ids: np.ndarray) -> np.ndarray:
        import numpy as np

        pos = _positions(self.gd, ids)
        return np.array([p or self.rank_d[int(x)] for p, x in zip(pos, ids, strict=True)], dtype=np.int64)

    def _rb(self, name: str, ids: np.ndarray) -> np.ndarray:
        import numpy as np

        pos = _positions(self.gb[name][0], ids)
        return np.array([p or self.rank_b[name][int(x)] for p, x in zip(pos, ids, strict=True)], dtype=np.int64)

    # -- results -------------------------------------------------------------------------
    def dense(self, top: int) -> tuple[Any, ...]:
        import numpy as np

        ids, d = self.gd[:top], self.gdd[:top]
        first, answer, ad = 0, -1, np.nan
        if len(self.c_ids):
            best = np.lexsort((self.c_ids, self.c_dist))[0]
            answer, ad = int(self.c_ids[best]), float(self.c_dist[best])
            first = int(self._rd(np.array([answer]))[0])
        return ids, d, 1.0 - d, first, answer, ad

    def bm25(self, name: str, top: int) -> tuple[Any, ...]:
        import numpy as np

        ids, sc, d = (x[:top] for x in self.gb[name])
        first, answer, ad = 0, -1, np.nan
        if len(self.c_ids):
            best = np.lexsort((self.c_ids, -self.c_score[name]))[0]
            answer, ad = int(self.c_ids[best]), float(self.c_dist[best])
            first = int(self._rb(name, np.array([answer]))[0])
        return ids, d, sc, first, answer, ad

    def hybrid(self, a: Analyzed) -> tuple[np.ndarray, np.ndarray]:
        """The fused head (ids, scores) of length ``k``; the first correct rank is kept in
        ``self.hy`` (or marked for a dump in ``self.deep``)."""
        import numpy as np

        h = self.hy[a.analyzer]
        cand, matched = h["cand"], h["matched"]
        for lo_key, hi_key, ranks in (("rd_lo", "rd_hi", self.rank_d), ("rb_lo", "rb_hi", self.rank_b[a.analyzer])):
            open_ = np.flatnonzero(h[lo_key] != h[hi_key])
            got = np.array([ranks.get(int(x), 0) for x in cand[open_]], dtype=np.int64)
            done = open_[got > 0]
            h[lo_key][done] = got[got > 0]
            h[hi_key][done] = got[got > 0]
        lo = _fused(h["rd_hi"], h["rb_hi"], matched)
        hi = _fused(h["rd_lo"], h["rb_lo"], matched)
        kk = min(a.k, len(cand))
        kth = np.partition(lo, len(lo) - kk)[len(lo) - kk]
        live = np.flatnonzero(hi >= kth)
        if np.any(lo[live] != hi[live]):
            raise AssertionError("sharded hybrid: an undecided candidate was left unresolved")
        order = np.lexsort((cand[live], -lo[live]))[:kk]
        head, fused = cand[live][order], lo[live][order]
        h["first"], h["answer"] = 0, -1
        if len(self.c_ids):
            m = self.c_score[a.analyzer] > 0
            rb = np.ones(len(self.c_ids), dtype=np.int64)
            rb[m] = self._rb(a.analyzer, self.c_ids[m])
            f = _fused(self._rd(self.c_ids), rb, m)
            best = np.lexsort((self.c_ids, -f))[0]
            c_star, f_star = int(self.c_ids[best]), float(f[best])
            h["answer"] = c_star
            if f_star > h["outside"]:  # every chunk that beats it is a candidate, each decided now
                beats = (lo > f_star) | ((lo == f_star) & (cand < c_star))
                if np.any(beats != ((hi > f_star) | ((hi == f_star) & (cand < c_star)))):
                    raise AssertionError("sharded hybrid: a candidate's place was left open")
                h["first"] = int(np.count_nonzero(beats)) + 1
            else:
                self.deep[a.analyzer] = (f_star, c_star)
        return head, fused

    def deep_rank(self, name: str, dumps: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """The first correct hybrid rank from every chunk's exact distance and score."""
        import numpy as np

        f_star, c_star = self.deep.pop(name)
        dist = np.concatenate([d[0] for d in dumps])
        m_ids = np.concatenate([d[1] for d in dumps]).astype(np.int64)
        m_sc = np.concatenate([d[2] for d in dumps])
        n = len(dist)
        chunk = np.arange(n)
        rd = np.empty(n, dtype=np.int64)
        rd[np.lexsort((chunk, dist))] = np.arange(1, n + 1)
        rb = np.empty(len(m_ids), dtype=np.int64)
        rb[np.lexsort((m_ids, -m_sc))] = np.arange(1, len(m_ids) + 1)
        f = _rrf(rd)
        f[m_ids] = _rrf(rd[m_ids]) + _rrf(rb)
        self.hy[name]["first"] = int(np.count_nonzero((f > f_star) | ((f == f_star) & (chunk < c_star)))) + 1


def _rerank(
    q: _Query,
    head: np.ndarray,
    hy_ids: np.ndarray,
    first: int,
    answer: int,
    top: int,
    score: Callable[[np.ndarray], Sequence[float]],
) -> tuple[Any, ...]:
    """The hybrid head re-sorted by cross-encoder score (ties: chunk id), then the rest."""
    import numpy as np

    head = head[:RERANK_DEPTH]
    sc = np.asarray(score(head), dtype=np.float64)
    new_head = rerank_order(head, sc.tolist())
    new_sc = sc[np.lexsort((head, -sc))]
    take = min(top, len(new_head))
    ids = np.concatenate([new_head[:take], hy_ids[take:top]])
    scores = np.concatenate([new_sc[:take], np.full(top - take, np.nan)])
    ad = np.nan
    if len(q.c_ids):
        inside = np.flatnonzero(np.isin(new_head, q.c_ids))
        if len(inside):
            first, answer = int(inside[0]) + 1, int(new_head[inside[0]])
        ad = float(q.dist(np.array([answer]))[0])
    return ids, q.dist(ids), scores, first, answer, ad


def rank_block_sharded(
    actors: list[Any],
    plan: Plan,
    qvec: np.ndarray,
    qtexts: Sequence[str],
    correct: Sequence[np.ndarray],
    cmax: float,
    rerank: Callable[[int, np.ndarray], Sequence[float]] | None,
    clock: dict[str, float],
) -> dict[str, Ranked]:
    """:func:`evalcore.retrieval.ranking.rank_block` over the shards held by ``actors``."""
    import numpy as np
    import ray

    tick = time.perf_counter

    def charge(stage: str, since: float) -> float:
        now = tick()
        clock[stage] = clock.get(stage, 0.0) + now - since
        return now

    t = tick()
    nb, top = len(qvec), plan.top
    refs = ray.put(np.asarray(qvec, dtype=np.float32)), ray.put(list(qtexts)), ray.put(list(correct))
    scans = ray.get([a.scan.remote(*refs, plan.dense_depth, plan.bm25_depth, cmax) for a in actors])
    t = charge("shard_scan", t)
    queries = [_Query(i, scans, plan) for i in range(nb)]
    del scans
    dense_p = [q.probes_d() for q in queries]
    bm_p = {a.analyzer: [q.probes_b(a.analyzer) for q in queries] for a in plan.analyzed}
    if any(len(p[1]) for p in dense_p) or any(len(p[1]) for ps in bm_p.values() for p in ps):
        counts = ray.get([a.count.remote(dense_p, bm_p) for a in actors])
        for i, q in enumerate(queries):
            q.counted(
                np.sum([c["dense"][i] for c in counts], axis=0),
                {name: np.sum([c["bm25"][name][i] for c in counts], axis=0) for name in bm_p},
            )
    t = charge("shard_count", t)
    cols: dict[str, list[tuple[Any, ...]]] = {name: [] for name in plan.retrievers}
    heads: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for q in queries:
        if plan.dense:
            cols["dense"].append(q.dense(top))
        for a in plan.analyzed:
            if a.bm25:
                cols[a.bm25].append(q.bm25(a.analyzer, top))
            if a.hybrid:
                heads.setdefault(a.analyzer, []).append(q.hybrid(a))
    for a in plan.analyzed:
        deep = [i for i, q in enumerate(queries) if a.analyzer in q.deep]
        if deep:
            dumps = ray.get([actor.dump.remote(deep, a.analyzer) for actor in actors])
            for j, i in enumerate(deep):
                queries[i].deep_rank(a.analyzer, [d[j] for d in dumps])
    t = charge("merge", t)
    for a in plan.analyzed:
        if not a.hybrid:
            continue
        hy_rows = []
        for i, q in enumerate(queries):
            head, fused = heads[a.analyzer][i]
            h = q.hy[a.analyzer]
            answer = h["answer"]
            ad = float(q.dist(np.array([answer]))[0]) if answer >= 0 else np.nan
            hy_rows.append((head[:top], q.dist(head[:top]), fused[:top], h["first"], answer, ad))
        if not a.hybrid.startswith("\0"):
            cols[a.hybrid] = hy_rows
        if a.rerank:
            assert rerank is not None  # a plan reranks only with a scorer
            rr = []
            for i, q in enumerate(queries):
                _, _, _, first, answer, _ = hy_rows[i]
                head = heads[a.analyzer][i][0]

                def score(ids: np.ndarray, _i: int = i) -> Sequence[float]:
                    assert rerank is not None
                    return rerank(_i, ids)

                rr.append(_rerank(q, head, hy_rows[i][0], first, answer, top, score))
            cols[a.rerank] = rr
        t = charge("rerank" if a.rerank else "merge", t)
    return {name: _stack(rows, nb, top) for name, rows in cols.items() if rows}


def _stack(rows: list[tuple[Any, ...]], nb: int, top: int) -> Ranked:
    import numpy as np

    ids = np.zeros((nb, top), dtype=np.int64)
    dist = np.zeros((nb, top))
    score = np.zeros((nb, top))
    for i, r in enumerate(rows):
        ids[i], dist[i], score[i] = r[0], r[1], r[2]
    first = np.array([r[3] for r in rows], dtype=np.int64)
    answer = np.array([r[4] for r in rows], dtype=np.int64)
    answer_dist = np.array([r[5] for r in rows], dtype=np.float64)
    return Ranked(ids, dist, score, first, answer, answer_dist)
