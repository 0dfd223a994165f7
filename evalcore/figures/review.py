"""The review pack's ``summary.md``: the decision and the comparison the pack's charts
support, what each file shows, and the methods in a few lines (no streamlit here). The
comparison is the Compare screen's: the same configurations, the same pairs, named and
counted in the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.figures.build import Figure, Selection, _now, _version
from evalcore.measures.stats import INTERVAL_METHOD, PAIRED_TEST
from evalcore.records import RunConfiguration

if TYPE_CHECKING:
    from evalcore.store import Store


def _comparison_lines(store: Store, selection: Selection, run_name: str) -> list[str]:
    """The review pack's comparison: the configurations the Compare screen compares (the
    pack's charts), named and counted with their pairs, and where the decided one stands."""
    from evalcore.figures import markdown_text as md
    from evalcore.read.compare import best, compare, decided_sentence, significance_text

    sides = selection.sides
    if len(sides) < 2:
        return ["Fewer than two configurations selected on the Compare screen: no paired comparison.", ""]
    comparison = compare(store, sides, selection.k, selection.adjust)
    pairs = len(sides) * (len(sides) - 1) // 2
    holm = (
        f"Holm-adjusted over the {pairs} {'pair' if pairs == 1 else 'pairs'}"
        if selection.adjust
        else "not adjusted (the Holm switch is off)"
    )
    lines = [
        "Configurations compared: "
        + ", ".join(md.escape(label) for label in comparison.labels)
        + f" ({len(sides)} configurations, {pairs} {'pair' if pairs == 1 else 'pairs'}, as on the Compare "
        f"screen and in the charts below; p-values {holm}).",
        "",
    ]
    top = best(comparison)
    if top is not None:
        lines += [md.escape(top.sentence(selection.k, comparison.p_name)), ""]
    decided = RunConfiguration(selection.run_id, selection.configuration, run_name)
    if decided in sides:
        lines += [md.escape(decided_sentence(comparison, decided, top)), ""]
    else:
        lines += [
            f"The decided configuration, {md.escape(selection.configuration.label)}, is not among them "
            "(pick it on the Compare screen to compare it).",
            "",
        ]
    return lines + [md.escape(significance_text(comparison)), ""]


def review_summary(store: Store, selection: Selection, figures: list[Figure], files: dict[str, list[str]]) -> str:
    """The review pack's Markdown summary: the decision and the comparison the charts support,
    what each file shows, and the methods in a few lines. User text (run names, notes) is escaped."""
    from evalcore.authors import shown as shown_author
    from evalcore.figures import markdown_text as md
    from evalcore.measures.claim import Claim, ClaimError
    from evalcore.measures.rounding import threshold_text
    from evalcore.read.claims import caption as claim_caption
    from evalcore.read.claims import claim_of, refuses_most, separability
    from evalcore.read.decisions import latest_decision
    from evalcore.read.sweeps import gate_axis, gate_table, ood_support, sentence_at, sweep

    made = _now()
    run = store.run(selection.run_id)
    lines = [
        f"# Review pack: run {md.escape(run['name'])} ({selection.run_id})",
        "",
        f"Made {made} by {_version()} from the dashboard's current selection.",
        "",
        "## Decision: the refusal threshold",
        "",
        f"Configuration **{md.escape(selection.configuration.label)}**, threshold "
        f"**t = {threshold_text(selection.threshold, 4)}** "
        f"({md.escape(selection.threshold_source)}).",
        "",
    ]
    decision = latest_decision(store, selection.run_id, selection.configuration)
    if decision is not None and abs(decision.threshold - selection.threshold) < 1e-12:
        lines += [f"Saved by {md.escape(shown_author(decision.author))} on {decision.created_at:%Y-%m-%d %H:%M}.", ""]
        if decision.note:
            lines += [f"Note saved with the decision: {md.escape(decision.note)}", ""]
        if decision.claim:
            lines += [md.escape(decision.claim_text()), ""]
    lines += ["### The threshold claim", ""]
    try:
        claim: Claim | None = claim_of(store, selection.run_id, selection.configuration, *selection.claim_params)
    except ClaimError as exc:
        claim = None
        lines += [f"No threshold claim can be made: {md.escape(exc)}", ""]
    if claim is not None:
        lines += [md.escape(claim_caption(claim)), "", md.escape(separability(claim)), ""]
        region = claim.bluff_region((selection.threshold,))  # rounded safely, read with the chosen t
        if claim.bluff_status == "bounded":
            inside = (
                selection.threshold > (claim.bluff_ok_up_to or 0.0)
                if claim.higher_is_closer
                else selection.threshold <= (claim.bluff_ok_up_to or 0.0)
            )
            verdict = "meets" if inside else "does NOT meet"
            lines += [f"The chosen t = {threshold_text(selection.threshold)} {verdict} the bluff claim ({region}).", ""]
    frame = sweep(store, selection.run_id, selection.configuration)
    if len(frame):
        lines += [sentence_at(frame, selection.threshold), ""]
        warning = ood_support(frame, selection.threshold)
        if warning:
            lines += [f"**Warning:** {warning}", ""]
        most = refuses_most(frame, selection.threshold, claim)
        if most:
            lines += [f"**Warning:** {md.escape(most)}", ""]
        table = gate_table(frame, selection.threshold)
        lines += ["| outcome | queries | of | share | 95% Wilson interval |", "|---|---:|---:|---:|---|"]
        for outcome, queries, of, share, low, high in table.itertuples(index=False, name=None):
            shown = "n/a" if of == 0 else f"{100 * share:.1f}%"
            interval = "n/a" if of == 0 else f"{100 * low:.1f}–{100 * high:.1f}%"
            lines.append(f"| {outcome} | {queries} | {of} | {shown} | {interval} |")
        lines.append("")
    lines += ["## Comparison", ""]
    lines += _comparison_lines(store, selection, str(run["name"]))
    lines += ["## Files", ""]
    for figure in figures:
        names = ", ".join(f"`{name}`" for name in files.get(figure.slug, []))
        lines += [f"- **{md.escape(figure.title)}**: {names}", f"  - {md.escape(figure.provenance.stamped().text())}"]
    axis = gate_axis(store, selection.run_id, selection.configuration)  # a run made elsewhere: its own score
    keeps = axis.keeps if axis.column == "distance" else f"{axis.keeps} ({axis.label})"
    lines += [
        "",
        "## Methods",
        "",
        "- recall@k: share of in-domain queries with a correct chunk (one whose text holds the whole "
        "answer) at rank k or better; MRR: mean of 1/rank of the first correct chunk, 0 when none.",
        f"- Intervals: {INTERVAL_METHOD}.",
        f"- Paired comparison: {PAIRED_TEST}; ties are not counted; with the Holm switch on, "
        "p-values are Holm-adjusted over the pairs of the configurations compared.",
        f"- The gate at t keeps, from a retriever's top 4 hits, those with {keeps}; nothing "
        "kept means NO ANSWER. Bluff: an out-of-domain query with a hit kept; lost answer: an in-domain "
        "query with a correct hit in the top 4 that the gate drops.",
        "- Every definition in full: docs/METHODS.md in the evalcore repository.",
        "",
    ]
    return "\n".join(lines)
