"""Print where every demo needle lands, for whoever edits evalcore/inputs/demo/questions.jsonl.

    python tools/demo_needles.py            # one line per group: status, topic, offsets
    python tools/demo_needles.py --dump DIR # also write each topic's canonical text to DIR/<key>.md

Status is ``ok`` (exactly one occurrence, off heading lines) or ``INVALID`` with the reason
evalcore.inputs.groundtruth gives (not found, found N times, inside a heading line). Needles must be
written against the canonical text (dump it to read it), not against ``pydoc_data.topics`` raw
text. Exit code 1 when any needle is not ``ok``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.inputs.demo import OOD_PATH, QUESTIONS_PATH, load_demo_corpus
from evalcore.inputs.groundtruth import load_ground_truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="write canonical texts to this folder")
    args = parser.parse_args(argv)
    corpus = load_demo_corpus()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for d in corpus.documents:
            (args.dump / f"{d.doc_id}.md").write_text(d.text, encoding="utf-8")
    gt = load_ground_truth(corpus, QUESTIONS_PATH, OOD_PATH)  # the product's own resolution
    needles = {q.group: q.needle or "" for q in gt.questions}
    invalid = {inv.group: inv.reason for inv in gt.invalid}
    for group in needles:
        span = gt.spans.get(group)
        status, where = ("ok", f"{span.doc_id}[{span.start}:{span.end}]") if span else ("INVALID", invalid[group])
        print(f"{group}  {status:8} {where:32} {needles[group][:70]}")
    kinds = [q.kind for q in gt.ood]
    topics = {span.doc_id for span in gt.spans.values()}
    print(
        f"{len(corpus.documents)} documents, {corpus.characters} characters; "
        f"{len(needles)} ground truths over {len(topics)} topics, {len(gt.invalid)} not ok; "
        f"ood {kinds.count('near')} near / {kinds.count('far')} far"
    )
    return 1 if gt.invalid else 0


if __name__ == "__main__":
    raise SystemExit(main())
