"""Memory and time of two pathological inputs, before (a given revision) and after (this
tree), measured side by side in one run, each in its own process (peak RSS from wait4):

1. a 30 MB one-line document (no sentence end, so boundaries makes one 31 MB chunk) run
   through ``python -m evalcore run --strategies C`` with the real model; the stored chunks,
   word-piece counts and vectors of both trees are compared;
2. a zip upload whose entries declare 100 bytes each and inflate to 1 GiB each (six in a
   6 MB zip), checked by ``evalcore.inputs.uploads.corpus_files``.

    python benchmarks/bench_hardening.py [--before c37c948] [--doc-mb 30] [--entries 6]

"before" is ``git archive REV`` unpacked in a temporary folder; nothing of it is kept.
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
sys.path.insert(0, str(ROOT / "tests"))

ZIP_CHECK = """
import sys, time
from evalcore.errors import InputError
from evalcore.inputs.uploads import UploadedFile, corpus_files
data = open(sys.argv[1], 'rb').read()
t0 = time.perf_counter()
try:
    files = corpus_files([UploadedFile('bomb.zip', data)])
    outcome = f'accepted: {len(files.files)} documents, skipped: {"; ".join(files.skipped)[:160]}'
except InputError as exc:
    outcome = f'refused: {exc}'
print(f'{time.perf_counter() - t0:.4f}\\t{outcome}')
"""


def measure(cmd: list[str], tree: Path, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(peak RSS in MB, wall seconds, stdout) of one process running with ``tree`` first on its path."""
    full = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **(env or {}))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=tree, env=full, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} in {tree} failed ({proc.returncode}): {errors[-2000:]}")
    return usage.ru_maxrss / 1024, wall, text


def checkout(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def one_line_document(folder: Path, megabytes: int) -> tuple[Path, Path]:
    """A corpus with one document: a title, a section, and one line of ``megabytes`` MB of
    lowercase words without a sentence end; questions whose needle lies inside the line."""
    rng = random.Random(7)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 11))) for _ in range(5000)]
    words, size = [], 0
    while size < megabytes * 1_000_000:
        w = rng.choice(vocab)
        words.append(w)
        size += len(w) + 1
    needle = "the unique needle phrase sits right here"
    words.insert(len(words) // 2, needle)
    corpus = folder / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "big.md").write_text("# Big\n\n## Body\n\n" + " ".join(words) + "\n", encoding="utf-8")
    questions = folder / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "where is the needle?", "needle": needle}) + "\n")
    return corpus, questions


def stored(store: Path) -> dict:
    import duckdb
    import numpy as np

    con = duckdb.connect(str(store), read_only=True)
    chunks = con.execute(
        'SELECT strategy, chunk_id, start, "end", evidence_start, md5(text), length(text), pieces '
        "FROM chunks ORDER BY strategy, chunk_id"
    ).fetchall()
    vectors = {
        h: np.asarray(v, dtype=np.float64)
        for h, v in con.execute("SELECT text_hash, vector FROM embeddings").fetchall()
    }
    con.close()
    return {"chunks": chunks, "vectors": vectors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="c37c948", help="the revision to compare with (default c37c948)")
    ap.add_argument("--doc-mb", type=int, default=30, help="size of the one-line document (default 30)")
    ap.add_argument("--entries", type=int, default=6, help="lying zip entries of 1 GiB each (default 6)")
    ap.add_argument("--skip-doc", action="store_true", help="only the zip")
    args = ap.parse_args()
    from zips import deflated_zeros, lying_zip

    with tempfile.TemporaryDirectory(prefix="bench-hardening-") as tmp:
        tmp = Path(tmp)
        trees = {"before": checkout(args.before, tmp / "before"), "after": ROOT}

        stream = deflated_zeros(1 << 30)
        bomb = tmp / "bomb.zip"
        bomb.write_bytes(lying_zip([f"doc{i}.md" for i in range(args.entries)], stream))
        print(
            f"zip: {args.entries} entries declaring 100 bytes, each inflating to 1 GiB; "
            f"{bomb.stat().st_size / 1e6:.1f} MB packed"
        )
        zip_rows = {}
        for label, tree in trees.items():
            rss, wall, out = measure([sys.executable, "-c", ZIP_CHECK, str(bomb)], tree)
            seconds, outcome = out.strip().split("\t", 1)
            zip_rows[label] = (rss, float(seconds))
            print(
                f"  {label:<6} ({args.before if label == 'before' else 'this tree'}): peak {rss:,.0f} MB, "
                f"{float(seconds):.4f} s checking; {outcome[:160]}"
            )
        print(
            f"  after/before: memory {zip_rows['after'][0] / zip_rows['before'][0]:.3f}, "
            f"time {zip_rows['after'][1] / max(zip_rows['before'][1], 1e-9):.5f}"
        )
        if args.skip_doc:
            return

        corpus, questions = one_line_document(tmp / "doc", args.doc_mb)
        size = (corpus / "big.md").stat().st_size
        print(
            f"\none-line document: {size / 1e6:.1f} MB, strategy C (boundaries: one chunk), dense/bm25/hybrid, "
            "real model"
        )
        results = {}
        for label, tree in trees.items():
            store = tmp / f"{label}.duckdb"
            rss, wall, _ = measure(
                [
                    sys.executable,
                    "-m",
                    "evalcore",
                    "--store",
                    str(store),
                    "run",
                    "--corpus",
                    str(corpus),
                    "--questions",
                    str(questions),
                    "--strategies",
                    "C",
                    "--retrievers",
                    "dense,bm25,hybrid",
                    "-q",
                    "--json",
                ],
                tree,
            )
            results[label] = (rss, wall, stored(store))
            print(f"  {label:<6}: peak {rss:,.0f} MB, {wall:.1f} s wall (whole CLI run)")
        b, a = results["before"][2], results["after"][2]
        same_chunks = b["chunks"] == a["chunks"]
        common = set(b["vectors"]) & set(a["vectors"])
        diff = max(float(abs(b["vectors"][h] - a["vectors"][h]).max()) for h in common) if common else float("nan")
        print(
            f"  after/before: memory {results['after'][0] / results['before'][0]:.3f}, "
            f"time {results['after'][1] / results['before'][1]:.3f}"
        )
        print(
            f"  chunks (offsets, text md5, length, word pieces) identical: {same_chunks} "
            f"({len(a['chunks'])} chunks, pieces {[c[-1] for c in a['chunks']]})"
        )
        print(f"  vectors: {len(common)} of {len(a['vectors'])} texts in both stores, largest difference {diff:.2e}")


if __name__ == "__main__":
    main()
