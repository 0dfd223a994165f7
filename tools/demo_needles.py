"""Print where every demo needle lands, for whoever edits evalcore/demo/questions.jsonl.

    python tools/demo_needles.py            # one line per group: status, topic, offsets
    python tools/demo_needles.py --dump DIR # also write each topic's canonical text to DIR/<key>.md

Status is ``ok`` (exactly one occurrence, off heading lines), ``NONE``, ``DUP xN`` or
``HEADING``. Needles must be written against the canonical text (dump it to read it),
not against ``pydoc_data.topics`` raw text. Exit code 1 when any needle is not ``ok``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.demo import OOD_PATH, QUESTIONS_PATH, load_demo_corpus  # noqa: E402

_HEADING_LINE = re.compile(r"^#+ .*$", re.M)


def needle_hits(needle: str, text: str) -> list[tuple[int, int]]:
    """(start, end) of every match; whitespace runs equal; overlapping matches counted."""
    body = r"\s+".join(re.escape(part) for part in needle.split())
    return [(m.start(), m.start() + len(m.group(1))) for m in re.finditer(f"(?=({body}))", text)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="write canonical texts to this folder")
    args = parser.parse_args(argv)
    corpus = load_demo_corpus()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for d in corpus.documents:
            (args.dump / f"{d.doc_id}.md").write_text(d.text, encoding="utf-8")
    groups: dict[str, str] = {}
    for line in QUESTIONS_PATH.read_text("utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            groups.setdefault(q["group"], q["needle"])
    bad, topics = 0, set()
    for group, needle in groups.items():
        hits = [(d, s, e) for d in corpus.documents for s, e in needle_hits(needle, d.text)]
        if len(hits) == 1:
            doc, s, e = hits[0]
            touch = any(m.start() < e and s < m.end() + 1 for m in _HEADING_LINE.finditer(doc.text))
            status, where = ("HEADING" if touch else "ok"), f"{doc.doc_id}[{s}:{e}]"
            topics.add(doc.doc_id)
        else:
            status = "NONE" if not hits else f"DUP x{len(hits)}"
            where = ",".join(f"{d.doc_id}[{s}:{e}]" for d, s, e in hits)
        bad += status != "ok"
        print(f"{group}  {status:8} {where:32} {needle[:70]}")
    kinds = [json.loads(x)["kind"] for x in OOD_PATH.read_text("utf-8").splitlines() if x.strip()]
    print(f"{len(corpus.documents)} documents, {corpus.characters} characters; "
          f"{len(groups)} ground truths over {len(topics)} topics, {bad} not ok; "
          f"ood {kinds.count('near')} near / {kinds.count('far')} far")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
