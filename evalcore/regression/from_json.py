"""A gate report read back from its JSON (:func:`evalcore.regression.report.to_dict`), so a
report the service computed (``POST /api/v1/gate``) prints exactly as a local one
(:func:`evalcore.regression.report.render`)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from evalcore.regression.model import BluffCheck, ConfigResult, GateReport, QueryChange, Side
from evalcore.regression.report import _sample


def _side(d: dict[str, Any]) -> Side:
    low, high = d["wilson95"]
    return Side(
        str(d["run_id"]),
        str(d["run_name"]),
        str(d["configuration"]),
        int(d["successes"]),
        int(d["queries"]),
        float(low),
        float(high),
    )


def _changes(items: list[dict[str, Any]]) -> tuple[QueryChange, ...]:
    return tuple(QueryChange(q["query_id"], q["text"], q["baseline_rank"], q["candidate_rank"]) for q in items)


def _bluffs(d: dict[str, Any] | None) -> BluffCheck | None:
    if d is None:
        return None
    return BluffCheck(
        threshold=float(d["threshold"]),
        decision_id=str(d["decision_id"]),
        note=str(d["note"] or ""),
        baseline_bluffs=int(d["baseline_bluffs"]),
        candidate_bluffs=int(d["candidate_bluffs"]),
        out_domain=int(d["out_of_domain"]),
        new=int(d["new"]),
        fixed=int(d["fixed"]),
        p_value=float(d["p_value"]),
        p_adjusted=float(d["p_adjusted"]),
        failed=bool(d["failed"]),
        new_queries=tuple((q["query_id"], q["text"]) for q in d.get("new_bluffs") or []),
        more_bluffs=bool(d.get("more_bluffs")),
        claim_failed=bool(d.get("claim_failed")),
        claim_note=d.get("claim_note"),
    )


def report_from_dict(d: dict[str, Any], holm: bool = True) -> GateReport:
    """The :class:`GateReport` whose :func:`to_dict` is ``d`` (``holm``: whether Holm was asked
    for; the JSON says only whether p was adjusted)."""
    results = []
    for r in d["configurations"]:
        p_adjusted = r["p_adjusted"] if r["p_adjusted"] is not None else r["p_value"]
        detectable = r.get("detectable_difference")
        results.append(
            ConfigResult(
                baseline=_side(r["baseline"]),
                candidate=_side(r["candidate"]),
                wins=int(r["wins"]),
                losses=int(r["losses"]),
                ties=int(r["ties"]),
                p_value=float(r["p_value"]),
                p_adjusted=float(p_adjusted),
                alpha=float(d["alpha"]),
                regressed=bool(r["regressed"]),
                below_floor=bool(r["below_floor"]),
                detectable=math.inf if detectable is None else float(detectable),
                lost=_changes(r["lost"]),
                won=_changes(r["won"]),
                bluffs=_bluffs(r.get("refusal_contract")),
                bluff_note=r.get("refusal_note"),
            )
        )
    report = GateReport(
        metric=str(d["metric"]),
        k=int(d["k"]),
        alpha=float(d["alpha"]),
        holm=bool(d["holm"]) or holm,
        min_effect=d.get("min_effect"),
        threshold_from_decision=bool(d["threshold_from_decision"]),
        baseline_run=dict(d["baseline"]),
        candidate_run=dict(d["candidate"]),
        n=int(d["queries"]),
        results=tuple(results),
        statement="",
        smallest_flag=d.get("smallest_flag"),
        notes=tuple(d.get("notes") or ()),
    )
    sample = str(d.get("sample_statement") or "")

    first = _sample(report).rstrip()
    statement = sample[len(first) :].strip() if sample.startswith(first) else sample

    return replace(report, statement=statement)
