"""Peak memory and time of ``import-run`` with a large TREC run file, each in its own process
(peak RSS from wait4), against the size of the file.

A synthetic corpus of ``--docs`` documents of ``--sentences`` sentences each; every sentence
is one chunk (with offsets); 20 questions whose needle is one sentence and 6 off-topic
queries; every query ranks every chunk, so the file has ``26 x docs x sentences`` lines
(the defaults: 1,040,000 lines, about 50 MB). The import runs as
``python -m evalcore import-run`` into a new store; the script prints the file's size, the
process's peak RSS, the peak relative to the file size, the wall time, and the stored hits
(which must equal the file's lines).

    python benchmarks/bench_import_run.py [--docs 200] [--sentences 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def write_inputs(folder: Path, docs: int, sentences: int, seed: int = 0) -> dict[str, Path]:
    """corpus/, questions.jsonl, ood.jsonl, chunks.jsonl and rankings.trec under ``folder``."""
    rng = random.Random(seed)
    corpus = folder / "corpus"
    corpus.mkdir(parents=True)
    chunk_rows, needles = [], []
    for d in range(docs):
        parts: list[str] = []
        offset = 0
        for s in range(sentences):
            text = f"Sentence {d}-{s} says {' '.join(rng.choices(WORDS, k=8))}."
            chunk_rows.append(
                {"id": f"c{d}-{s}", "document": f"doc{d}", "text": text, "start": offset, "end": offset + len(text)}
            )
            if len(needles) < 20 and s == sentences // 2 and d % max(1, docs // 20) == 0:
                needles.append(text)
            parts.append(text + "\n")
            offset += len(text) + 1
        (corpus / f"doc{d}.txt").write_text("".join(parts), encoding="utf-8")
    with open(folder / "chunks.jsonl", "w", encoding="utf-8") as fh:
        for row in chunk_rows:
            fh.write(json.dumps(row) + "\n")
    questions = [
        {"id": f"q{i}", "question": f"what does sentence {i} say?", "needle": n} for i, n in enumerate(needles)
    ]
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    ood = [{"id": f"o{i}", "query": f"off topic {i}", "kind": "far"} for i in range(6)]
    (folder / "ood.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ood), encoding="utf-8")
    ids = [r["id"] for r in chunk_rows]
    with open(folder / "rankings.trec", "w", encoding="utf-8") as fh:
        for qid in [q["id"] for q in questions] + [o["id"] for o in ood]:
            order = ids[:]
            rng.shuffle(order)
            n = len(order)
            fh.writelines(f"{qid} Q0 {c} {r} {1.0 - r / (n + 1)!r} bench\n" for r, c in enumerate(order, start=1))
    return {name: folder / name for name in ("corpus", "questions.jsonl", "ood.jsonl", "chunks.jsonl", "rankings.trec")}


def measured(argv: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """(exit code, peak RSS in MB, wall seconds, stderr's tail) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, wall, err[-400:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--keep", default=None, help="write the inputs here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-import-run-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        files = write_inputs(folder, args.docs, args.sentences)
        trec = files["rankings.trec"]
        lines = sum(1 for _ in open(trec, "rb"))
        size_mb = trec.stat().st_size / 2**20
        store = Path(tmp) / "store.duckdb"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "evalcore", "--store", str(store), "import-run"]
        cmd += ["--corpus", str(files["corpus"]), "--questions", str(files["questions.jsonl"])]
        cmd += [
            "--ood",
            str(files["ood.jsonl"]),
            "--chunks",
            str(files["chunks.jsonl"]),
            "--rankings",
            str(trec),
            "--json",
        ]
        code, peak, wall, err = measured(cmd, env)
        stored = None
        if code == 0:
            import duckdb

            con = duckdb.connect(str(store), read_only=True)
            stored = con.execute("SELECT count(*) FROM hits").fetchone()[0]
            con.close()
        print(f"rankings.trec: {lines:,} lines, {size_mb:.1f} MB")
        print(f"import-run: exit {code}, peak RSS {peak:.0f} MB ({peak / size_mb:.1f} x the file), {wall:.1f} s")
        print(f"stored hits: {stored if stored is None else f'{stored:,}'} (file lines {lines:,})")
        if code != 0:
            print(err)
        return 0 if code == 0 and stored == lines else 1


if __name__ == "__main__":
    raise SystemExit(main())
