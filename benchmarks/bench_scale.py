"""Retrieval and scoring at scale: Q queries over N chunks, no embedding.

    python benchmarks/bench_scale.py --chunks 1000000 --queries 10000
    python benchmarks/bench_scale.py --chunks 1000000 --queries 10000 --ray local --shards 4

Prints one JSON line {"chunks", "queries", "seconds", "cpu_seconds", "load_average_before",
"peak_rss_mb", ...}: the seconds (wall, and CPU: the steadier figure on a shared machine) of
``evalcore.retrieval.scored.score_queries`` (BM25 index build, dense, bm25 and hybrid retrieval,
first correct ranks, top 20 hits as result frames) and the process's peak resident memory;
``stage_seconds`` splits them (``bm25_build``, ``vector_scan``: the dense matrix products and
the dense rows, ``bm25``, ``fusion``; ``frames``: the result and hit frames, the rest).

The machine's limit is measured in the same run, before the work: ``sgemm_limit_gflops``, the
best single-precision matrix multiply rate of numpy here (OpenBLAS picking its own kernel: a
child process with ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` unset, as
``bench_embed.py`` measures it). ``dense_scan_ratio`` is the dense stage's rate (``2 x chunks
x dim`` FLOPs per query over ``vector_scan`` seconds) against it; ``openblas_kernel`` is the
kernel this process's numpy runs (a machine that forces an older one through those variables
slows the work, not the limit: unset them for this command to compare like with like).
``fusion_share`` is the fusion stage over dense and bm25 together.
Then (``--analyzer english``, the default; ``--analyzer ""`` skips it) the BM25 index built
twice over the same chunk texts held in a list, as a run holds them: with the chapter's
tokenizer and with the analyzer (``bm25:english``: Unicode words, each stemmed once), and
the ratio of the two times ("analyzer_build").

With ``--ray ADDRESS`` (``local``: a Ray runtime on this machine) retrieval runs sharded on
``--shards N`` Ray actors (``evalcore.retrieval.sharded.driver.score_sharded``): the same figures, with
``"shards"``, ``"shard_sizes"`` and ``"peak_rss_mb_per_actor"`` (each actor's peak resident
memory) added to the line; the vectors are generated block by block and streamed to the actors,
so this process never holds them all (``peak_rss_mb`` is the driver's).

Synthetic data, made to look like a real evaluation: chunk vectors are random unit
vectors (384 dimensions); an in-domain query (80 %) is its target chunk's vector plus
noise of a random size, so its correct chunk ranks anywhere from first to deep down;
out-of-domain queries (20 %) are random. Chunk texts are 80 words drawn from a Zipf
vocabulary of 50,000 words (so the commonest words occur in most chunks, as stop words
do); a query has six words of its target chunk and two common words. Texts are made as
they are indexed and not kept (a run keeps them in its chunk records; that memory is not
part of retrieval). The figures are synthetic; the work and memory are the engine's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DIM = 384
WORDS_PER_CHUNK = 80
VOCAB = 50_000


def vocabulary() -> list[str]:
    import numpy as np

    rng = np.random.default_rng(1)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, rng.integers(2, 9))) + str(i % 7) for i in range(VOCAB)]


def chunk_words(n: int, seed: int, block: int = 20_000):
    """Word ids of each chunk, a block at a time (deterministic)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        ids = rng.zipf(1.15, size=(b1 - b0, WORDS_PER_CHUNK)) - 1
        yield b0, np.where(ids < VOCAB, ids, rng.integers(0, VOCAB, ids.shape))


def vector_blocks(n: int, rng):
    """The chunk vectors, 65,536 rows at a time, drawn from ``rng``."""
    import numpy as np

    for b0 in range(0, n, 65536):
        part = rng.standard_normal((min(n, b0 + 65536) - b0, DIM), dtype=np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        yield part


def make(n: int, q: int, seed: int = 7, stream: bool = False):
    """(chunk vectors, query vectors, query texts, correct ids, in-domain count, texts()).

    ``stream``: the chunk vectors are not kept; the first item is then a function giving
    them again block by block (the same values)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if stream:
        for _ in vector_blocks(n, rng):
            pass
    else:
        cvec = np.empty((n, DIM), dtype=np.float32)
        b0 = 0
        for part in vector_blocks(n, rng):
            cvec[b0 : b0 + len(part)] = part
            b0 += len(part)
    n_in = int(q * 0.8)
    targets = rng.integers(0, n, n_in)
    noise = rng.uniform(0.05, 0.4, (n_in, 1)).astype(np.float32)
    qvec = rng.standard_normal((q, DIM), dtype=np.float32)
    if stream:
        rows = np.empty((n_in, DIM), dtype=np.float32)
        b0 = 0
        for part in vector_blocks(n, np.random.default_rng(seed)):
            inside = (targets >= b0) & (targets < b0 + len(part))
            rows[inside] = part[targets[inside] - b0]
            b0 += len(part)
        qvec[:n_in] = rows + noise * qvec[:n_in]
    else:
        qvec[:n_in] = cvec[targets] + noise * qvec[:n_in]
    qvec /= np.linalg.norm(qvec, axis=1, keepdims=True)
    vocab = vocabulary()
    want = {int(t): [] for t in targets}
    for b0, ids in chunk_words(n, seed):
        for t in [t for t in want if b0 <= t < b0 + len(ids)]:
            want[t] = ids[t - b0]
    qtexts = []
    for i in range(q):
        words = list(rng.choice(want[int(targets[i])], 6)) if i < n_in else list(rng.integers(0, VOCAB, 6))
        words += list(rng.integers(0, 20, 2))
        qtexts.append(" ".join(vocab[w] for w in words))
    correct = [np.array([t], dtype=np.int64) for t in targets] + [np.zeros(0, dtype=np.int64)] * (q - n_in)

    def texts():
        for _, ids in chunk_words(n, seed):
            for row in ids.tolist():
                yield " ".join(map(vocab.__getitem__, row))

    if stream:

        def blocks():
            return vector_blocks(n, np.random.default_rng(seed))

        return blocks, qvec, qtexts, correct, n_in, texts
    return cvec, qvec, qtexts, correct, n_in, texts


def blas_kernel() -> str:
    """The OpenBLAS kernel this process's numpy runs (threadpoolctl), or what runs instead."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl is not installed)"

    import numpy

    found = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
    mine = [i for i in found if "numpy" in str(i.get("filepath", ""))] or found  # numpy's, not scipy's
    if not mine:
        return "no OpenBLAS"
    i = mine[0]
    threads = f"{i.get('num_threads')} threads (numpy {numpy.__version__})"
    return f"OpenBLAS {i.get('version')} {i.get('architecture')}, {threads}"


def analyzer_build(texts: list[str], analyzer: str) -> dict[str, dict[str, float]]:
    """Seconds (wall and CPU: on a shared machine the CPU time is the steadier figure) of
    the BM25 index build with the chapter's tokenizer and with ``analyzer``, and their ratios."""
    from evalcore.retrieval.bm25 import BM25

    out: dict[str, float] = {}
    for name in ("", analyzer):
        label = "bm25:" + name if name else "bm25"
        wall, cpu = time.perf_counter(), time.process_time()
        BM25.build(texts, analyzer=name)
        out[label] = round(time.perf_counter() - wall, 2)
        out[label + " cpu"] = round(time.process_time() - cpu, 2)
    other = f"bm25:{analyzer}"
    for suffix in ("", " cpu"):
        plain = out["bm25" + suffix]
        out["ratio" + suffix] = round(out[other + suffix] / plain, 2) if plain else float("nan")
    return {"analyzer_build": out}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--retrievers", default="dense,bm25,hybrid")
    p.add_argument("--analyzer", default="english", help="a BM25 analyzer whose index build is timed against bm25's")
    p.add_argument("--ray", default=None, metavar="ADDRESS", help="retrieve sharded on Ray (local: a local runtime)")
    p.add_argument("--shards", type=int, default=None, help="with --ray: Ray actors, one shard each")
    args = p.parse_args(argv)
    import numpy as np
    from bench_embed import numpy_rate

    from evalcore.retrieval.ranking import workers
    from evalcore.retrieval.scored import score_queries

    limit = numpy_rate(3) / 1e9  # before anything else runs: the machine's best sgemm rate

    cvec, qvec, qtexts, correct, n_in, texts = make(args.chunks, args.queries, stream=bool(args.ray))
    qids = [f"q{i}" for i in range(args.queries)]
    retrievers = args.retrievers.split(",")
    sharding = {}
    if args.ray:
        from evalcore.embedding.distributed import connect
        from evalcore.retrieval.sharded.driver import score_sharded

        connect(args.ray)  # before the clock: starting a local runtime is not retrieval
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        started, cpu = time.perf_counter(), time.process_time()
        scored = score_sharded(
            args.ray,
            args.shards,
            "bench",
            "S",
            texts(),
            cvec(),
            qvec,
            qids,
            qtexts,
            correct,
            n_in,
            retrievers,
            20,
            n_chunks=args.chunks,
        )
        sharding = {
            "shards": len(scored.shard_sizes),
            "shard_sizes": scored.shard_sizes,
            "peak_rss_mb_per_actor": scored.peak_rss_mb,
        }
    else:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        started, cpu = time.perf_counter(), time.process_time()
        scored = score_queries("bench", "S", texts(), cvec, qvec, qids, qtexts, correct, n_in, retrievers, 20)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    ranks = {}
    for frame in scored.results:
        for retr, part in frame.groupby("retriever"):
            ranks.setdefault(retr, []).append(part["first_correct_rank"].dropna().to_numpy(dtype=np.int64))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    stages = {k: round(v, 2) for k, v in scored.clock.items()}
    stages["frames"] = round(seconds - sum(scored.clock.values()), 2)
    scan = scored.clock.get("vector_scan")  # a sharded run's scan holds BM25 too: no dense rate
    dense_rate = 2.0 * args.chunks * qvec.shape[1] * args.queries / scan / 1e9 if scan else float("nan")
    inputs = scored.clock.get("vector_scan", 0.0) + scored.clock.get("bm25", 0.0)
    builds = analyzer_build(list(texts()), args.analyzer) if args.analyzer else {}
    print(
        json.dumps(
            {
                "chunks": args.chunks,
                "queries": args.queries,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu_seconds, 2),
                "load_average_before": round(load, 2),
                "peak_rss_mb": round(peak, 1),
                **sharding,
                "stage_seconds": stages,
                "sgemm_limit_gflops": round(limit, 1),
                "openblas_kernel": blas_kernel(),
                "dense_scan_gflops": round(dense_rate, 1) if scan else None,
                "dense_scan_ratio": round(dense_rate / limit, 3) if scan else None,
                "fusion_share": round(scored.clock["fusion"] / inputs, 3)
                if "fusion" in scored.clock and inputs
                else None,
                "threads": workers(),
                "median_first_rank": {k: float(np.median(np.concatenate(v))) for k, v in ranks.items()},
                "recall@20": {k: round(float(np.mean(np.concatenate(v) <= 20)) * 0.8, 3) for k, v in ranks.items()},
                **builds,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
