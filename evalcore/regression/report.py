"""A gate report (:class:`evalcore.regression.model.GateReport`) as text, Markdown, JSON or JUnit XML.

- text: for the terminal and CI logs;
- Markdown: a pull-request comment (GitHub-flavoured tables; the queries lost are in
  ``<details>`` blocks so a long list does not bury the verdict);
- JSON: every figure, for scripts;
- JUnit XML: one test case per configuration (and per refusal-contract check), a ``failure``
  for each that fails, so CI systems show the gate like a test suite.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from evalcore.measures.rounding import threshold_text
from evalcore.measures.stats import GATE_TEST, format_p_plain

if TYPE_CHECKING:
    from evalcore.regression.model import BluffCheck, ConfigResult, GateReport, QueryChange, Side

FORMATS = ("text", "markdown", "json")
SHOW_LOST = 25  # lost queries listed per configuration in text and Markdown (JSON and JUnit list all)
TEXT_WIDTH = 100  # prose lines of the text report are wrapped here


def _interval(side: Side) -> str:
    return f"{side.value:.3f} [{side.low:.3f}, {side.high:.3f}]"


def _verdict(r: ConfigResult) -> str:
    if r.failed:
        return "FAIL: " + ", ".join(r.verdicts)
    return "pass, significantly better" if r.improved else "pass"


def _rank(rank: int | None) -> str:
    return "none" if rank is None else str(rank)


def _headline(report: GateReport) -> str:
    failed = report.failed
    m = len(report.results)
    if failed:
        return f"FAIL: {len(failed)} of {m} configuration{'s' if m > 1 else ''} worse"
    return f"PASS: no configuration of {m} significantly worse"


def _method(report: GateReport) -> str:
    m = len(report.results)
    adj = (
        f", p Holm-adjusted over {m} configurations"
        if report.adjusted
        else (", p unadjusted (--no-holm)" if m > 1 else "")
    )
    floor = f"; floor: fail when worse by {report.min_effect:g} or more" if report.min_effect is not None else ""
    return (
        f"{report.metric} on {report.n} in-domain queries, paired: wins = queries only the candidate "
        f"finds in the top {report.k}, losses = only the baseline; {GATE_TEST}, alpha "
        f"{report.alpha:g}{adj}{floor}. A configuration regresses when losses > wins and p < alpha."
    )


def _sample(report: GateReport) -> str:
    flag = report.smallest_flag
    if flag is None:
        first = (
            f"With {report.n} queries no drop can be significant at alpha {report.test_alpha:.2g}, whatever its size."
        )
    else:
        first = (
            f"The smallest drop that can fail this gate on significance is {flag} lost queries with "
            f"no win ({flag / report.n:.3f} of {report.n})."
        )
    return f"{first} {report.statement}"


def _run_line(run: dict[str, Any]) -> str:
    return f"{run['name']} {run['run_id']} ({run['created_at']})"


def _bluff_verdict(b: BluffCheck) -> str:
    why = [w for w, hit in (("more bluffs", b.more_bluffs), ("bluff claim not met", b.claim_failed)) if hit]
    return f"FAIL: {', '.join(why)}" if why else "pass"


def _bluff_line(b: BluffCheck, configuration: str) -> str:
    return (
        f"{configuration}: threshold {threshold_text(b.threshold)} (baseline decision {b.decision_id}"
        f"{': ' + b.note if b.note else ''}): bluffs {b.baseline_bluffs} -> {b.candidate_bluffs} of "
        f"{b.out_domain} out-of-domain queries; {b.new} new, {b.fixed} fixed; "
        f"p {format_p_plain(b.p_value)}, adjusted {format_p_plain(b.p_adjusted)}"
        + (f"; {b.claim_note}" if b.claim_note else "")
        + f": {_bluff_verdict(b)}"
    )


# --- text -----------------------------------------------------------------------------------


def to_text(report: GateReport) -> str:
    """The report for a terminal: headline, runs, one line per configuration, then details."""
    lines = [
        f"evalcore gate: {_headline(report)}",
        f"baseline  {_run_line(report.baseline_run)}",
        f"candidate {_run_line(report.candidate_run)}",
    ]
    for n in report.notes:
        lines += textwrap.wrap(f"note: {n}", TEXT_WIDTH)
    lines += [*textwrap.wrap(_method(report), TEXT_WIDTH), ""]
    name_w = max([len("configuration")] + [len(r.name) for r in report.results])
    metric = report.metric
    head = (
        f"{'configuration':<{name_w}}  {'baseline ' + metric:<22}  {'candidate ' + metric:<22}"
        f"  {'diff':>6}  {'W/L/T':>9}  {'p':>8}" + (f"  {'p Holm':>8}" if report.adjusted else "") + "  verdict"
    )
    lines += [head, "-" * len(head)]
    for r in report.results:
        wlt = f"{r.wins}/{r.losses}/{r.ties}"
        adj = f"  {format_p_plain(r.p_adjusted):>8}" if report.adjusted else ""
        lines.append(
            f"{r.name:<{name_w}}  {_interval(r.baseline):<22}  {_interval(r.candidate):<22}"
            f"  {r.difference:>+6.3f}  {wlt:>9}  {format_p_plain(r.p_value):>8}{adj}  {_verdict(r)}"
        )
    lines.append("")
    for r in report.results:
        if r.bluffs is not None:
            lines.append("refusal contract: " + _bluff_line(r.bluffs, r.name))
            for q, text in r.bluffs.new_queries[:SHOW_LOST]:
                lines.append(f"    new bluff  {q}  {text}")
        elif r.bluff_note:
            lines.append(f"refusal contract: {r.name}: {r.bluff_note}")
    for r in report.results:
        if not r.lost:
            continue
        lines.append(
            f"{r.name}: {r.losses} quer{'y' if r.losses == 1 else 'ies'} lost "
            f"(found by the baseline in the top {report.k}, not by the candidate; "
            f"first correct rank baseline -> candidate):"
        )
        id_w = max(len(c.query_id) for c in r.lost[:SHOW_LOST])
        for c in r.lost[:SHOW_LOST]:
            ranks = f"{_rank(c.baseline_rank)} -> {_rank(c.candidate_rank)}"
            lines.append(f"    {c.query_id:<{id_w}}  {ranks:<12}  {c.text}")
        if len(r.lost) > SHOW_LOST:
            lines.append(f"    ... and {len(r.lost) - SHOW_LOST} more (--format json lists all)")
    lines += textwrap.wrap(_sample(report), TEXT_WIDTH)
    return "\n".join(lines)


# --- Markdown -------------------------------------------------------------------------------


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


_MENTION = re.compile(r"@(?=\w)")
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp)(?=://)|\b(www)(?=\.)")
ZWSP = "\u200b"


def _cell(text: object) -> str:
    """Text safe inside a Markdown table cell: one line, Markdown's inline punctuation
    backslash-escaped (``* _ [ ] ` ~ |``), ``<`` and ``>`` as entities (no raw HTML), and
    neither an @mention nor a bare URL left to link: a zero-width space follows ``@`` and
    the scheme (``https``, ``www``), so a run name cannot ping people or link out."""
    s = _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
    s = _MENTION.sub("@" + ZWSP, s)
    s = _AUTOLINK.sub(lambda m: (m.group(1) or m.group(2)) + ZWSP, s)
    return s.replace("<", "&lt;").replace(">", "&gt;")


def _code(text: object) -> str:
    """A code span safe inside a Markdown table cell (a code span shows ``<`` and ``>`` as they are)."""
    s = " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
    return f"`{s}`"


def to_markdown(report: GateReport) -> str:
    """The report as a pull-request comment (GitHub-flavoured Markdown)."""
    b, c = report.baseline_run, report.candidate_run
    out = [
        f"### evalcore gate: {_headline(report)}",
        "",
        f"Baseline **{_cell(b['name'])}** {_code(b['run_id'])} · candidate **{_cell(c['name'])}** {_code(c['run_id'])}",
        "",
    ]
    out += [f"- {_cell(n)}" for n in report.notes] + ([""] if report.notes else [])
    out += [_cell(_method(report)), ""]
    adj_head = " p (Holm) |" if report.adjusted else ""
    out.append(
        f"| configuration | baseline {report.metric} | candidate {report.metric} | difference "
        f"| wins / losses / ties | p |{adj_head} verdict |"
    )
    out.append("|---|---|---|---:|---:|---:|" + ("---:|" if report.adjusted else "") + "---|")
    for r in report.results:
        verdict = f"**{_verdict(r)}**" if r.failed else _verdict(r)
        adj = f" {format_p_plain(r.p_adjusted)} |" if report.adjusted else ""
        out.append(
            f"| {_code(r.name)} | {_interval(r.baseline)} | {_interval(r.candidate)} | "
            f"{r.difference:+.3f} | {r.wins} / {r.losses} / {r.ties} | {format_p_plain(r.p_value)} |{adj} {verdict} |"
        )
    out.append("")
    checks = [r for r in report.results if r.bluffs is not None or r.bluff_note]
    if checks:
        out += [
            "**Refusal contract** (the baseline's saved threshold applied to both runs; a bluff is an "
            "out-of-domain query with a top-4 hit below it; paired sign test on those queries):",
            "",
        ]
        out += [
            "| configuration | threshold | baseline bluffs | candidate bluffs | new / fixed | p | verdict |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in checks:
            x = r.bluffs
            if x is None:
                out.append(f"| {_code(r.name)} | – | – | – | – | – | {_cell(r.bluff_note)} |")
                continue
            verdict = f"**{_bluff_verdict(x)}**" if x.failed else "pass"
            if x.claim_note:
                verdict += f" ({_cell(x.claim_note)})"
            p = format_p_plain(x.p_adjusted) + (
                f" (unadjusted {format_p_plain(x.p_value)})" if x.p_adjusted != x.p_value else ""
            )
            out.append(
                f"| {_code(r.name)} | {threshold_text(x.threshold)} | {x.baseline_bluffs} of {x.out_domain} | "
                f"{x.candidate_bluffs} of {x.out_domain} | {x.new} / {x.fixed} | {p} | {verdict} |"
            )
        out.append("")
    for r in report.results:
        if not r.lost:
            continue
        out += [
            "<details>",
            f"<summary>{_cell(r.name)}: {r.losses} quer{'y' if r.losses == 1 else 'ies'} lost</summary>",
            "",
            "| query | text | first correct rank (baseline → candidate) |",
            "|---|---|---|",
        ]
        for q in r.lost[:SHOW_LOST]:
            out.append(
                f"| {_code(q.query_id)} | {_cell(q.text)} | {_rank(q.baseline_rank)} → {_rank(q.candidate_rank)} |"
            )
        if len(r.lost) > SHOW_LOST:
            out.append(f"| … | {len(r.lost) - SHOW_LOST} more (`--format json` lists all) | |")
        out += ["", "</details>", ""]
    out.append(f"_{_cell(_sample(report))}_")
    return "\n".join(out) + "\n"


# --- JSON -----------------------------------------------------------------------------------


def _number(x: float) -> float | None:
    """JSON has no infinity: an undetectable difference is null."""
    return None if math.isinf(x) or math.isnan(x) else x


def to_dict(report: GateReport) -> dict[str, Any]:
    """Every figure of the report as plain JSON types."""

    def side(s: Side) -> dict[str, Any]:
        return {
            "run_id": s.run_id,
            "run_name": s.run_name,
            "configuration": s.configuration,
            "successes": s.successes,
            "queries": s.n,
            "value": s.value,
            "wilson95": [s.low, s.high],
        }

    def change(q: QueryChange) -> dict[str, Any]:
        return {
            "query_id": q.query_id,
            "text": q.text,
            "baseline_rank": q.baseline_rank,
            "candidate_rank": q.candidate_rank,
        }

    configs = []
    for r in report.results:
        item = {
            "configuration": r.name,
            "baseline": side(r.baseline),
            "candidate": side(r.candidate),
            "difference": r.difference,
            "wins": r.wins,
            "losses": r.losses,
            "ties": r.ties,
            "p_value": r.p_value,
            "p_adjusted": r.p_adjusted if report.adjusted else None,
            "regressed": r.regressed,
            "below_floor": r.below_floor,
            "improved": r.improved,
            "failed": r.failed,
            "verdicts": list(r.verdicts),
            "detectable_difference": _number(r.detectable),
            "lost": [change(q) for q in r.lost],
            "won": [change(q) for q in r.won],
            "refusal_contract": None,
            "refusal_note": r.bluff_note,
        }
        if r.bluffs is not None:
            x = r.bluffs
            item["refusal_contract"] = {
                "threshold": x.threshold,
                "decision_id": x.decision_id,
                "note": x.note,
                "baseline_bluffs": x.baseline_bluffs,
                "candidate_bluffs": x.candidate_bluffs,
                "out_of_domain": x.out_domain,
                "new": x.new,
                "fixed": x.fixed,
                "p_value": x.p_value,
                "p_adjusted": x.p_adjusted,
                "failed": x.failed,
                "more_bluffs": x.more_bluffs,
                "claim_failed": x.claim_failed,
                "claim_note": x.claim_note,
                "new_bluffs": [{"query_id": q, "text": t} for q, t in x.new_queries],
            }
        configs.append(item)
    return {
        "verdict": "fail" if report.failed else "pass",
        "exit_code": report.exit_code,
        "metric": report.metric,
        "k": report.k,
        "alpha": report.alpha,
        "holm": report.adjusted,
        "min_effect": report.min_effect,
        "threshold_from_decision": report.threshold_from_decision,
        "baseline": report.baseline_run,
        "candidate": report.candidate_run,
        "queries": report.n,
        "test": GATE_TEST,
        "test_alpha": report.test_alpha,
        "detectable_difference": _number(report.results[0].detectable) if report.results else None,
        "smallest_flag": report.smallest_flag,
        "sample_statement": _sample(report),
        "notes": list(report.notes),
        "configurations": configs,
    }


def to_json(report: GateReport) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False)


# --- JUnit XML ------------------------------------------------------------------------------


def to_junit(report: GateReport) -> str:
    """JUnit XML: one ``testcase`` per configuration (classname ``evalcore.gate.<metric>``) and per
    refusal-contract check (``evalcore.gate.bluffs``); a ``failure`` element for each that fails."""
    cases: list[ET.Element] = []
    for r in report.results:
        case = ET.Element("testcase", classname=f"evalcore.gate.{report.metric}", name=r.name, time="0")
        body = [
            f"baseline {_interval(r.baseline)}, candidate {_interval(r.candidate)}, "
            f"wins {r.wins}, losses {r.losses}, ties {r.ties}, p {format_p_plain(r.p_value)}"
            + (f", Holm-adjusted {format_p_plain(r.p_adjusted)}" if report.adjusted else "")
        ]
        body += [
            f"lost {q.query_id}: {q.text} (rank {_rank(q.baseline_rank)} -> {_rank(q.candidate_rank)})" for q in r.lost
        ]
        if r.regressed or r.below_floor:
            why = [v for v in r.verdicts if v != "more bluffs"]
            failure = ET.SubElement(
                case,
                "failure",
                type=",".join(why),
                message=f"{r.name}: {', '.join(why)}: {report.metric} "
                f"{r.baseline.value:.3f} -> {r.candidate.value:.3f}, "
                f"{r.losses} lost, {r.wins} won, p {format_p_plain(r.p_adjusted)}",
            )
            failure.text = "\n".join(body)
        ET.SubElement(case, "system-out").text = "\n".join(body)
        cases.append(case)
        if r.bluffs is not None:
            x = r.bluffs
            bc = ET.Element(
                "testcase", classname="evalcore.gate.bluffs", name=f"{r.name} bluffs at {x.threshold:.4g}", time="0"
            )
            text = "\n".join([_bluff_line(x, r.name)] + [f"new bluff {q}: {t}" for q, t in x.new_queries])
            if x.failed:
                ET.SubElement(
                    bc,
                    "failure",
                    type=_bluff_verdict(x).removeprefix("FAIL: "),
                    message=f"{r.name}: {_bluff_verdict(x).removeprefix('FAIL: ')} at threshold {x.threshold:.4g}: "
                    f"{x.baseline_bluffs} -> {x.candidate_bluffs}, p {format_p_plain(x.p_adjusted)}",
                ).text = text
            ET.SubElement(bc, "system-out").text = text
            cases.append(bc)
    failures = sum(1 for c in cases if c.find("failure") is not None)
    root = ET.Element(
        "testsuites", name="evalcore gate", tests=str(len(cases)), failures=str(failures), errors="0", time="0"
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"evalcore gate {report.metric}",
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time="0",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("metric", report.metric),
        ("alpha", report.alpha),
        ("holm", report.adjusted),
        ("baseline", report.baseline_run["run_id"]),
        ("candidate", report.candidate_run["run_id"]),
        ("queries", report.n),
        ("min_effect", report.min_effect),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=key, value=str(value))
    suite.extend(cases)
    ET.SubElement(suite, "system-out").text = _sample(report)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(report: GateReport, fmt: str) -> str:
    """``text``, ``markdown`` or ``json``; ValueError for another format."""
    if fmt == "text":
        return to_text(report)
    if fmt == "markdown":
        return to_markdown(report)
    if fmt == "json":
        return to_json(report)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
