"""Check `python -m evalcore chunks --strategy E` output against the seed's chunkDocument.

Usage:
    python -m evalcore chunks --corpus DIR --strategy E -o ours.jsonl
    python tools/check_chunks.py --corpus DIR ours.jsonl

It runs the seed's TypeScript chunker (tests/oracle/chunk.mjs, the seed's code with the
type annotations removed) with Node.js on every document's canonical text and compares
chunk for chunk: document, text, content, section, from, to. Exit 0 when all agree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.inputs.corpus import load_corpus  # noqa: E402


def seed_chunks(corpus_dir: str, node: str = "node", target: int = 512) -> list[dict]:
    corpus = load_corpus(corpus_dir)
    jobs = [{"doc": d.text, "title": d.title, "target": target} for d in corpus.documents]
    out = subprocess.run(
        [node, str(ROOT / "tests" / "oracle" / "run_chunk.mjs")],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for d, chunks in zip(corpus.documents, json.loads(out.stdout), strict=True):
        for c in chunks:
            rows.append(
                {
                    "document": d.doc_id,
                    "text": c["text"],
                    "content": c["content"],
                    "section": c["section"],
                    "from": c["from"],
                    "to": c["to"],
                }
            )
    return rows


def compare(ours: list[dict], reference: list[dict]) -> list[str]:
    """Differences as readable lines; empty when every chunk agrees."""
    problems = []
    if len(ours) != len(reference):
        problems.append(f"chunk count: ours {len(ours)}, seed {len(reference)}")
    for i, (a, b) in enumerate(zip(ours, reference, strict=False)):  # counts may differ: reported above
        for key in ("document", "text", "content", "section", "from", "to"):
            if a.get(key) != b[key]:
                problems.append(f"chunk {i} ({b['document']}): {key} differs: {a.get(key)!r:.80} != {b[key]!r:.80}")
                break
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="the corpus folder the chunks came from")
    p.add_argument("chunks", help="JSON lines written by `python -m evalcore chunks --strategy E`")
    p.add_argument("--node", default="node", help="Node.js executable")
    args = p.parse_args()
    ours = [json.loads(line) for line in Path(args.chunks).read_text(encoding="utf-8").splitlines() if line]
    problems = compare(ours, seed_chunks(args.corpus, args.node))
    for line in problems[:20]:
        print(line)
    print(
        f"{len(ours)} chunks compared with the seed's chunkDocument: "
        f"{'all agree' if not problems else f'{len(problems)} differences'}"
    )
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
