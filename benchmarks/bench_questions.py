"""Time the Questions screen's reads, cold and warm, and ``suggest`` over 10,000 documents.

    python benchmarks/bench_questions.py [--documents 10000] [--items 200] [--queries 100000]

The reads are the ones the screen makes when a person opens one document and looks at the
coverage of the set (evalcore.inputs.authoring, evalcore.read.question_sets and
evalcore.read.triage), each called through the screen's own cache wrapper
(``evalcore_app.ui.cached``: keyed by function and arguments, the store by its
change stamp, a copy of the result handed out): "cold" is the first call (a new corpus or a
changed set), "warm" the same call again (what every rerun of
the screen costs while nothing changed). The issue's bounds: warm under 1 s, ``suggest`` over
10,000 documents under 10 s. Two corpora: the built-in demo (the Python language reference,
its own questions) and a synthetic 10,000-document corpus of real sentences (XQuAD and
COVID-QA from ../shared/data, dealt out as benchmarks/bench_suggest.py does; the set: the
drafts of ``--items`` suggested candidates). A kept triage list of ``--queries`` lines is read
too (progress and one page). Prints figures; not a test.

Measured (2-core shared machine, busy): the 100,000-line list stored in 4.6 s; demo (79
documents, 72 items): one visit 1.27 s cold, 0.11 s warm; synthetic (10,000 documents, 3.2 M
characters, 200 items): 11.5 s cold (resolving the set over the corpus for coverage, and the
verdict, dominate), 0.52 s warm (copying the 10,000 coverage rows is most of it);
``suggest -n 200`` over the 10,000 documents 1.3 to 2.7 s. Before the cache keyed a corpus by
Python's hash of its records, Streamlit hashed the whole corpus at every call: 27 s warm.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
logging.getLogger("streamlit").setLevel(logging.ERROR)  # no runtime here: the cache works in memory

from bench_suggest import sentences  # noqa: E402

from evalcore.chunking import DEFAULT_STRATEGIES  # noqa: E402
from evalcore.inputs import authoring  # noqa: E402
from evalcore.inputs.corpus import load_corpus  # noqa: E402
from evalcore.inputs.suggest import suggest  # noqa: E402
from evalcore.read import question_sets as rq  # noqa: E402
from evalcore.read import triage as rt  # noqa: E402
from evalcore.records import Corpus, Question  # noqa: E402
from evalcore.store import Store  # noqa: E402
from evalcore.store import triage as writer  # noqa: E402
from evalcore_app import ui  # noqa: E402


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def screen_reads(corpus: Corpus, items: list[Question], store: Store, set_name: str) -> list[tuple[str, Any]]:
    """The reads of one visit: the document list, one document's sections, a selection's
    verdict, the set's coverage and its items that do not resolve, candidates, the triage list."""
    strategies = DEFAULT_STRATEGIES.split(",")
    doc = corpus.documents[len(corpus.documents) // 2]
    cand = suggest(Corpus(corpus.root, (doc,)), 1)  # a valid span of this document to select
    start, end = (cand[0].start, cand[0].end) if cand else (0, min(60, len(doc.text)))
    return [
        ("documents (search '')", lambda: ui.cached(authoring.find_documents, corpus, "")),
        ("sections of one document", lambda: ui.cached(authoring.sections, doc)),
        (
            "verdict of a selection",
            lambda: ui.cached(authoring.check_needle, corpus, doc.doc_id, start, end, strategies),
        ),
        ("coverage", lambda: ui.cached(authoring.section_coverage, corpus, items)),
        ("items not resolving", lambda: ui.cached(rq.not_resolving, corpus, items)),
        ("candidates (10)", lambda: ui.cached(authoring.candidates, corpus, 10, 0)),
        ("triage progress", lambda: ui.cached(rt.progress, store, set_name, "")),
        ("triage page 1", lambda: ui.cached(rt.page, store, set_name, "", 1, 20)),
    ]


def report(title: str, corpus: Corpus, items: list[Question], store: Store, set_name: str) -> float:
    print(f"\n{title}: {len(corpus.documents):,} documents, {corpus.characters:,} characters, {len(items)} items")
    print(f"  {'read':<28} {'cold s':>8} {'warm s':>8}")
    cold_total = warm_total = 0.0
    for name, read in screen_reads(corpus, items, store, set_name):
        cold, _ = timed(read)
        warm, _ = timed(read)
        cold_total += cold
        warm_total += warm
        print(f"  {name:<28} {cold:8.3f} {warm:8.3f}")
    print(f"  {'one visit':<28} {cold_total:8.3f} {warm_total:8.3f}   (warm bound: < 1 s)")
    return warm_total


def synthetic(folder: Path, documents: int) -> Path:
    corpus_dir = folder / "corpus"
    if corpus_dir.exists():
        return corpus_dir
    corpus_dir.mkdir(parents=True)
    pool = sentences()
    per = max(2, len(pool) // documents)
    for i in range(documents):
        part = [pool[(i * per + j) % len(pool)] for j in range(per)]
        half = len(part) // 2
        body = " ".join(part[:half]) + "\n\n## Part two\n\n" + " ".join(part[half:])
        (corpus_dir / f"doc{i:05d}.md").write_text(f"# Document {i}\n\n{body}\n", encoding="utf-8")
    return corpus_dir


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=10_000)
    p.add_argument("--items", type=int, default=200, help="items of the synthetic corpus's set")
    p.add_argument("--queries", type=int, default=100_000, help="lines of the kept triage list")
    p.add_argument("--keep", default=None, help="build the synthetic corpus here (kept)")
    args = p.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-questions-"))
    store = Store(folder / "bench.duckdb")
    pasted = [f"real query {i}" for i in range(args.queries)]
    seconds, added = timed(lambda: writer.add_queries(store, "bench", "", pasted))
    print(f"triage list: {added:,} queries stored in {seconds:.2f} s (one bulk insert)")

    from evalcore.inputs.sources import load_demo

    seconds, (demo, gt) = timed(load_demo)
    print(f"demo corpus loaded in {seconds:.2f} s")
    warm_demo = report("demo", demo, list(gt.questions), store, "bench")

    corpus_dir = synthetic(folder, args.documents)
    seconds, big = timed(lambda: load_corpus(corpus_dir))
    print(f"\nsynthetic corpus loaded in {seconds:.2f} s ({corpus_dir})")
    seconds, found = timed(lambda: suggest(big, args.items, seed=0))
    print(f"suggest -n {args.items} over {len(big.documents):,} documents: {seconds:.2f} s (bound: < 10 s)")
    items = [
        Question(f"c{i}", c.draft, f"c{i}", "cloze", c.needle, i + 1, c.doc_id, c.start, c.end)
        for i, c in enumerate(found)
    ]
    warm_big = report("synthetic", big, items, store, "bench")
    print(f"\nwarm visit: demo {warm_demo:.3f} s, synthetic {warm_big:.3f} s")


if __name__ == "__main__":
    main()
