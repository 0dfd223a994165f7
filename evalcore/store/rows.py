"""Row shapes of the run tables that every kind of run writes alike: documents and queries.

The built-in pipeline (:mod:`evalcore.run.runner`) and runs made elsewhere
(:mod:`evalcore.external`) store the corpus and the ground truth the same way, so every
reader and every comparison sees the same documents and queries.
"""

from __future__ import annotations

from typing import Any

from evalcore import PIPELINE_VERSION
from evalcore.records import Corpus, GroundTruth


def document_rows(run_id: str, corpus: Corpus, model: str | None, dim: int | None) -> list[dict[str, Any]]:
    """One ``documents`` row per document, failed ones included (with their reason).
    ``model``/``dim`` stamp the embedding model (None for runs embedded elsewhere)."""
    rows = []
    for d in corpus.documents:
        rows.append(
            {
                "run_id": run_id,
                "doc_id": d.doc_id,
                "title": d.title,
                "source_type": d.source_type,
                "path": d.path,
                "state": "indexed",
                "reason": None,
                "extractor": d.extractor,
                "extractor_version": d.extractor_version,
                "model": model,
                "model_dim": dim,
                "pipeline_version": PIPELINE_VERSION,
                "characters": len(d.text),
                "sections": d.sections,
                "text": d.text,
                "pages": d.pages,
                "page_starts": list(d.page_starts) or None,
                "notes": list(d.notes) or None,
                "file_hash": d.file_hash or None,
            }
        )
    for f in corpus.failed:
        rows.append(
            {
                "run_id": run_id,
                "doc_id": f.doc_id,
                "title": None,
                "source_type": None,
                "path": f.path,
                "state": "failed",
                "reason": f.reason,
                "extractor": None,
                "extractor_version": None,
                "model": None,
                "model_dim": None,
                "pipeline_version": None,
                "characters": None,
                "sections": None,
                "text": None,
                "pages": None,
                "page_starts": None,
                "notes": None,
                "file_hash": None,
            }
        )
    return rows


def query_rows(run_id: str, gt: GroundTruth) -> list[dict[str, Any]]:
    """One ``queries`` row per in-domain question (valid or not, with the reason) and per
    out-of-domain query."""
    rows = []
    invalid = {inv.group: inv.reason for inv in gt.invalid}
    for q in gt.questions:
        span = gt.spans.get(q.group)
        rows.append(
            {
                "run_id": run_id,
                "query_id": q.query_id,
                "domain": "in",
                "text": q.question,
                "group_id": q.group,
                "variant": q.variant,
                "kind": None,
                "needle": q.needle,
                "doc_id": span.doc_id if span else q.document,
                "start": span.start if span else None,
                "end": span.end if span else None,
                "valid": span is not None,
                "invalid_reason": invalid.get(q.group),
                "line": q.line,
            }
        )
    for ood in gt.ood:
        rows.append(
            {
                "run_id": run_id,
                "query_id": ood.query_id,
                "domain": "out",
                "text": ood.query,
                "group_id": None,
                "variant": None,
                "kind": ood.kind,
                "needle": None,
                "doc_id": None,
                "start": None,
                "end": None,
                "valid": True,
                "invalid_reason": None,
                "line": ood.line,
            }
        )
    return rows


def ground_truth_settings(corpus: Corpus, gt: GroundTruth) -> dict[str, Any]:
    """The counts every run's ``settings`` carries about its inputs."""
    return {
        "queries_in": len(gt.valid_questions),
        "queries_in_total": len(gt.questions),
        "queries_out": len(gt.ood),
        "ground_truths": len(gt.spans),
        "invalid_needles": len(gt.invalid),
        "documents": len(corpus.documents),
        "failed_documents": len(corpus.failed),
        "characters": corpus.characters,
        "sections": sum(d.sections for d in corpus.documents),
    }
