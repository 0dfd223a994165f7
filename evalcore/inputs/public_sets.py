"""Importers: turn public QA sets into a corpus folder and question files.

``import_squad`` reads SQuAD-format JSON (SQuAD v1.1, XQuAD, the COVID-QA snapshot) and
writes one Markdown document per article (``# Title``, then its paragraphs separated by
blank lines), ``questions.jsonl`` with exact spans (``document``, ``start``, ``end``:
METHODS.md "The words") and, when out-of-domain questions are given, ``ood.jsonl``.

Offsets are code points into the canonical text the Markdown extractor makes of the
written file; the importer writes text that is already canonical (``\\n`` line endings,
no BOM, no front matter) and checks every span against the reloaded corpus.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.errors import InputError
from evalcore.inputs.corpus import load_corpus


@dataclass
class ImportReport:
    """What an import wrote and what it skipped, with reasons."""

    documents: int = 0
    questions: int = 0
    ood: int = 0
    skipped: list[str] = field(default_factory=list)
    relocated: int = 0  # answers whose answer_start was off and were found nearby


def _slug(title: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-.") or "document"
    slug, n = base, 2
    while slug.lower() in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug.lower())
    return slug


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")


def _locate(context: str, answer: str, hint: int) -> int | None:
    """Offset of ``answer`` in ``context``: at ``hint`` if it is there, else the nearest occurrence."""
    if context[hint : hint + len(answer)] == answer:
        return hint
    found = [m.start() for m in re.finditer(re.escape(answer), context)]
    return min(found, key=lambda i: abs(i - hint)) if found else None


def import_squad(source: str | Path, out_dir: str | Path, ood: Iterable[tuple[str, str, str]] = ()) -> ImportReport:
    """Write ``out_dir/corpus/*.md``, ``out_dir/questions.jsonl`` and (with ``ood``)
    ``out_dir/ood.jsonl`` from a SQuAD-format file. ``ood`` yields (id, query, kind).

    Unanswerable questions (``is_impossible``) and answers that cannot be found in their
    paragraph are skipped and listed in the report. Raises InputError for a file that is
    not SQuAD-format JSON, or an ``out_dir`` that already holds a corpus.
    """
    source, out = _regular(source), Path(out_dir)
    try:
        data = json.loads(Path(source).read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{source}: not a SQuAD-format JSON file ({exc})") from exc
    corpus = out / "corpus"
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise InputError(f"{out}: not a folder (a file, a FIFO or a broken link); give a folder to write into")
    if corpus.exists() and any(corpus.iterdir()):
        raise InputError(f"{corpus}: already holds files; import into an empty folder")
    try:
        corpus.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{corpus}: cannot make the folder ({exc.strerror or exc})") from None
    report = ImportReport()
    taken: set[str] = set()
    rows: list[dict[str, Any]] = []
    for a, article in enumerate(data):
        paragraphs = article.get("paragraphs") or []
        title = str(
            article.get("title") or paragraphs[0].get("document_id", f"article {a + 1}")
            if paragraphs
            else f"article {a + 1}"
        ).replace("_", " ")
        doc_id = _slug(title, taken)
        text = f"# {title}\n\n"
        for p in paragraphs:
            context = _clean(str(p["context"]))
            base = len(text)
            for qa in p.get("qas", []):
                qid = str(qa["id"])
                if qa.get("is_impossible") or not qa.get("answers"):
                    report.skipped.append(f"{qid}: no answer (unanswerable)")
                    continue
                answer = _clean(str(qa["answers"][0]["text"]))
                start = _locate(context, answer, int(qa["answers"][0].get("answer_start", 0)))
                if start is None:
                    report.skipped.append(f"{qid}: answer {answer[:40]!r} not found in its paragraph")
                    continue
                if start != qa["answers"][0].get("answer_start"):
                    report.relocated += 1
                rows.append(
                    {
                        "id": qid,
                        "question": str(qa["question"]).strip(),
                        "document": doc_id,
                        "start": base + start,
                        "end": base + start + len(answer),
                        "group": qid,
                        "variant": "squad",
                        "_answer": answer,
                    }
                )
            text += context.rstrip("\n") + "\n\n"
        (corpus / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="\n")
        report.documents += 1
    _check_spans(corpus, rows)
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            row.pop("_answer")
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    report.questions = len(rows)
    ood = list(ood)
    if ood:
        with open(out / "ood.jsonl", "w", encoding="utf-8") as fh:
            for qid, query, kind in ood:
                fh.write(json.dumps({"id": qid, "query": query, "kind": kind}, ensure_ascii=False) + "\n")
        report.ood = len(ood)
    return report


def _check_spans(corpus_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Every span must slice its answer out of the canonical text the extractor makes."""
    texts = {d.doc_id: d.text for d in load_corpus(corpus_dir).documents}
    for row in rows:
        got = texts[row["document"]][row["start"] : row["end"]]
        if got != row["_answer"]:
            raise InputError(f"import: span of question {row['id']} slices {got!r}, not {row['_answer']!r}")


def questions_from_csv(
    path: str | Path, column: str = "question", kind: str = "far", limit: int | None = None, prefix: str = "ood"
) -> list[tuple[str, str, str]]:
    """(id, query, kind) for the distinct non-empty values of ``column`` in a CSV file."""
    if kind not in ("near", "far"):
        raise InputError(f"kind must be near or far, got {kind!r}")
    try:
        return _csv_questions(_regular(path), column, kind, limit, prefix)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path}: not a readable UTF-8 CSV file ({exc})") from None


def _regular(path: str | Path) -> Path:
    """``path`` when it is a regular file (after links); InputError naming it otherwise (a
    folder, a FIFO, which would wait for a writer, or nothing)."""
    path = Path(path)
    if not path.is_file():
        what = "no such file" if not path.exists() else "not a regular file"
        raise InputError(f"{path}: {what}")
    return path


def _csv_questions(path: Path, column: str, kind: str, limit: int | None, prefix: str) -> list[tuple[str, str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if column not in (reader.fieldnames or []):
            raise InputError(f"{path}: no column {column!r} (columns: {', '.join(reader.fieldnames or [])})")
        seen: set[str] = set()
        out: list[tuple[str, str, str]] = []
        for row in reader:
            q = (row[column] or "").strip()
            if q and q not in seen:
                seen.add(q)
                out.append((f"{prefix}-{len(out) + 1:04d}", q, kind))
            if limit is not None and len(out) >= limit:
                break
    return out
