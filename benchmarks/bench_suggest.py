"""Time ``evalcore dataset suggest`` on a 10,000-document corpus (the issue's bound: < 10 s).

    python benchmarks/bench_suggest.py [--documents 10000] [-n 100] [--keep DIR]

The corpus is made of real text: the distinct sentences of the XQuAD (all languages) and
COVID-QA sets in ../shared/data, dealt out over the documents (a heading, two sections).
Prints the time to load the corpus, of ``suggest`` itself and of the whole command, and
checks the first candidates' uniqueness with a regular expression over the corpus. Not a test.

Measured (2-core shared machine, 10,000 documents, 3.2 M characters): -n 100: suggest 0.66 s,
the whole command 2.2 s; -n 2000: suggest 7.1 s (each candidate scans the corpus once).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = (ROOT / ".." / "shared" / "data").resolve()

from evalcore.inputs.corpus import load_corpus  # noqa: E402
from evalcore.inputs.suggest import suggest  # noqa: E402


def sentences() -> list[str]:
    """Every distinct sentence of the real sets, in file order."""
    texts: list[str] = []
    for path in sorted((DATA / "xquad").glob("xquad.*.json")):
        for art in json.loads(path.read_text(encoding="utf-8"))["data"]:
            texts += [p["context"] for p in art["paragraphs"]]
    covid = DATA / "covid-qa" / "data" / "question-answering" / "200423_covidQA.json"
    if covid.exists():
        for art in json.loads(covid.read_text(encoding="utf-8"))["data"]:
            texts += [p["context"] for p in art["paragraphs"]]
    out = (s.strip() for t in texts for s in re.split(r"(?<=[.!?])\s+|\n+", t))
    return list(dict.fromkeys(s for s in out if len(s) > 20))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=10_000)
    p.add_argument("-n", type=int, default=100)
    p.add_argument("--keep", default=None, help="build the corpus here (kept)")
    args = p.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-suggest-"))
    corpus_dir = folder / "corpus"
    pool = sentences()
    if not corpus_dir.exists():
        corpus_dir.mkdir(parents=True)
        per = max(2, len(pool) // args.documents)
        for i in range(args.documents):
            part = [pool[(i * per + j) % len(pool)] for j in range(per)]
            half = len(part) // 2
            body = " ".join(part[:half]) + "\n\n## Part two\n\n" + " ".join(part[half:])
            (corpus_dir / f"doc{i:05d}.md").write_text(f"# Document {i}\n\n{body}\n", encoding="utf-8")
    print(f"{args.documents} documents from {len(pool)} distinct real sentences in {corpus_dir}")
    t0 = time.perf_counter()
    corpus = load_corpus(corpus_dir)
    t1 = time.perf_counter()
    found = suggest(corpus, args.n, seed=0)
    t2 = time.perf_counter()
    print(f"load_corpus {t1 - t0:.2f} s, {corpus.characters:,} characters")
    print(f"suggest -n {args.n}: {len(found)} candidates from {len({c.doc_id for c in found})} documents "
          f"in {t2 - t1:.2f} s")  # fmt: skip
    out = folder / "candidates.jsonl"
    t3 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "evalcore", "dataset", "suggest", "--corpus", str(corpus_dir), "-n", str(args.n)]
        + ["-o", str(out)],
        check=True,
        cwd=ROOT,
    )
    print(f"the whole command (start, load, suggest, write): {time.perf_counter() - t3:.2f} s")
    texts = [d.text for d in corpus.documents]
    for c in found[:20]:
        pattern = re.compile("(?=" + r"\s+".join(re.escape(w) for w in c.needle.split()) + ")")
        assert sum(len(pattern.findall(t)) for t in texts) == 1, c
    print("checked: the first 20 candidates occur once in the corpus")


if __name__ == "__main__":
    main()
