"""An external retriever to evaluate: another splitter and another library's BM25 (rank_bm25).

- the splitter cuts each document's canonical text into windows of three sentences (a
  sentence ends at ``.``, ``!`` or ``?`` followed by whitespace, or at a blank line), with no
  regard for sections or our 512-character target: a different chunker from A-G;
- the ranking is ``rank_bm25.BM25Okapi`` (a library we do not ship) over lower-cased word
  tokens of each window's text.

Every other chunk is written with its offsets, the others with their text only, so import
exercises both ways of locating a chunk. ``write_files`` writes CHUNKS.jsonl and the
rankings as a TREC run file and as JSONL.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from rank_bm25 import BM25Okapi

from evalcore.inputs import demo
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import load_ground_truth

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Window:
    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str


def sentence_windows(corpus, sentences: int = 3) -> list[Window]:
    """Windows of ``sentences`` sentences over every document (offsets into canonical text)."""
    out = []
    for doc in corpus.documents:
        text = doc.text
        bounds, last = [], 0
        for m in _SENTENCE_END.finditer(text):
            bounds.append((last, m.start()))
            last = m.end()
        bounds.append((last, len(text)))
        spans = [(a, b) for a, b in bounds if text[a:b].strip()]
        for i in range(0, len(spans), sentences):
            group = spans[i : i + sentences]
            start, end = group[0][0], group[-1][1]
            while start < end and text[start].isspace():
                start += 1
            out.append(
                Window(f"{doc.doc_id.replace('/', '_')}::{i // sentences}", doc.doc_id, start, end, text[start:end])
            )
    return out


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_rankings(
    windows: list[Window], queries: dict[str, str], depth: int = 50
) -> dict[str, list[tuple[str, float]]]:
    """{query id: [(chunk id, BM25 score), ...]} best first, at most ``depth`` hits, ties by chunk order."""
    bm25 = BM25Okapi([tokens(w.text) for w in windows])
    out = {}
    for qid, text in queries.items():
        scores = bm25.get_scores(tokens(text))
        order = sorted(range(len(windows)), key=lambda i: (-scores[i], i))[:depth]
        out[qid] = [(windows[i].chunk_id, float(scores[i])) for i in order]
    return out


def all_queries(gt) -> dict[str, str]:
    return {**{q.query_id: q.question for q in gt.questions}, **{q.query_id: q.query for q in gt.ood}}


def write_files(folder: Path, corpus, gt, depth: int = 50) -> dict[str, Path]:
    """CHUNKS.jsonl (every other chunk with offsets), rankings.trec and rankings.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    windows = sentence_windows(corpus)
    rankings = bm25_rankings(windows, all_queries(gt), depth)
    chunks = folder / "chunks.jsonl"
    with open(chunks, "w", encoding="utf-8") as fh:
        for i, w in enumerate(windows):
            row = {"id": w.chunk_id, "document": w.doc_id, "text": w.text}
            if i % 2 == 0:
                row.update(start=w.start, end=w.end)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    trec = folder / "rankings.trec"
    with open(trec, "w", encoding="utf-8") as fh:
        for qid, hits in rankings.items():
            for rank, (chunk, score) in enumerate(hits, start=1):
                fh.write(f"{qid} Q0 {chunk} {rank} {score!r} rank_bm25\n")
    jsonl = folder / "rankings.jsonl"
    with open(jsonl, "w", encoding="utf-8") as fh:
        for qid, hits in rankings.items():
            fh.write(json.dumps({"query": qid, "hits": [{"chunk": c, "score": s} for c, s in hits]}) + "\n")
    return {"chunks": chunks, "trec": trec, "jsonl": jsonl}


def main(argv: list[str] | None = None) -> int:
    """Write the example's files for a corpus (or the demo): ``python examples/external_bm25.py
    --demo -o DIR`` then ``python -m evalcore import-run --demo --chunks DIR/chunks.jsonl
    --rankings DIR/rankings.trec --chunker sent3 --retriever rank_bm25``."""

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", metavar="DIR")
    p.add_argument("--questions", metavar="FILE")
    p.add_argument("--ood", metavar="FILE")
    p.add_argument("--demo", action="store_true", help="the built-in demo corpus and questions")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--depth", type=int, default=50, help="hits per query (default 50)")
    args = p.parse_args(argv)
    if args.demo:
        corpus = demo.load_demo_corpus()
        gt = load_ground_truth(corpus, demo.QUESTIONS_PATH, demo.OOD_PATH)
    else:
        corpus = load_corpus(args.corpus)
        gt = load_ground_truth(corpus, args.questions, args.ood)
    for name, path in write_files(Path(args.output), corpus, gt, args.depth).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    import sys

    # Run from a clone without installing evalcore: its package is the folder above this one.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
