"""The review pack's ``summary.md``: the decision and the comparison the pack's charts
support, what each file shows, and the methods in a few lines (no streamlit here). The
comparison is the Compare screen's: the same configurations, the same pairs, named and
counted in the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.authors import shown as shown_author
from evalcore.figures import markdown_text as md
from evalcore.figures.build import Figure, Selection, _made, _now, _version
from evalcore.i18n import ENGLISH, Translator
from evalcore.i18n.templates import SOURCES
from evalcore.measures.claim import Claim, ClaimError
from evalcore.measures.claim_check import ClaimCheck, outside_claim
from evalcore.measures.rounding import rate_bound_text, rate_lower_text, threshold_text
from evalcore.measures.stats import INTERVAL_METHOD, PAIRED_TEST
from evalcore.read.claims import caption as claim_caption
from evalcore.read.claims import check_of, claim_of, refuses_most, separability
from evalcore.read.compare import compare
from evalcore.read.comparison.statements import best, decided_sentence, significance_text
from evalcore.read.decisions import latest_decision
from evalcore.read.sweeps import gate_axis, gate_table, ood_support, run_sweep, sentence_at
from evalcore.records import RunConfiguration
from evalcore.store import reading

if TYPE_CHECKING:
    from evalcore.store import Store


def _comparison_lines(store: Store, selection: Selection, run_name: str, tr: Translator = ENGLISH) -> list[str]:
    """The review pack's comparison: the configurations the Compare screen compares (the
    pack's charts), named and counted with their pairs, and where the decided one stands."""
    _ = tr.gettext
    sides = selection.sides
    if len(sides) < 2:
        return [_("Fewer than two configurations selected on the Compare screen: no paired comparison."), ""]
    comparison = compare(store, sides, selection.k, selection.adjust)
    pairs = len(sides) * (len(sides) - 1) // 2
    pair_words = tr.ngettext("{n} pair", "{n} pairs", pairs).format(n=pairs)
    holm = (
        _("Holm-adjusted over the {pairs}").format(pairs=pair_words)
        if selection.adjust
        else _("not adjusted (the Holm switch is off)")
    )
    lines = [
        _(
            "Configurations compared: {labels} ({n} configurations, {pairs}, as on the Compare screen and in the "
            "charts below; p-values {holm})."
        ).format(
            labels=", ".join(md.escape(label) for label in comparison.labels), n=len(sides), pairs=pair_words, holm=holm
        ),
        "",
    ]
    top = best(comparison)
    if top is not None:
        lines += [md.escape(top.sentence(selection.k, comparison.p_name, tr)), ""]
    decided = RunConfiguration(selection.run_id, selection.configuration, run_name)
    if decided in sides:
        lines += [md.escape(tr.numbers_in(decided_sentence(comparison, decided, top))), ""]
    else:
        lines += [
            _(
                "The decided configuration, {label}, is not among them (pick it on the Compare screen to compare it)."
            ).format(label=md.escape(selection.configuration.label)),
            "",
        ]
    return lines + [md.escape(significance_text(comparison, tr)), ""]


def _verdict_lines(check: ClaimCheck, tr: Translator) -> list[str]:
    """Whether the chosen t meets each bounded side of the claim
    (:func:`evalcore.measures.claim_check.meets_claim`), and when it does not, the bound and what the
    gate does there (:func:`evalcore.measures.claim_check.outside_claim`)."""
    _ = tr.gettext
    t = threshold_text(check.threshold)
    lines: list[str] = []
    if check.bluff is not None and check.bluff_bound_text is not None:
        region = f"t {check.bluff_op} {check.bluff_bound_text}"
        verdict = (
            _("The chosen t = {t} meets the bluff claim ({region}).")
            if check.bluff
            else _("The chosen t = {t} does NOT meet the bluff claim ({region}).")
        )
        lines += [tr.numbers_in(verdict.format(t=t, region=region)), ""]
    if check.lost is not None and check.lost_bound_text is not None:
        region = f"t {check.lost_op} {check.lost_bound_text}"
        verdict = (
            _("The chosen t = {t} meets the lost claim ({region}).")
            if check.lost
            else _("The chosen t = {t} does NOT meet the lost claim ({region}).")
        )
        lines += [tr.numbers_in(verdict.format(t=t, region=region)), ""]
    outside = outside_claim(check, tr)
    if outside:
        lines += [_("**Warning:** {warning}").format(warning=md.escape(outside)), ""]
    return lines


def review_summary(
    store: Store, selection: Selection, figures: list[Figure], files: dict[str, list[str]], tr: Translator = ENGLISH
) -> str:
    """The review pack's Markdown summary: the decision and the comparison the charts support,
    what each file shows, and the methods in a few lines. User text (run names, notes) is escaped.
    ``tr``: the dashboard's language (named in the summary's provenance line). Its twenty-odd
    reads share one connection to the store (:func:`evalcore.store.reading`)."""
    with reading():
        return _summary(store, selection, figures, files, tr)


def _summary(
    store: Store, selection: Selection, figures: list[Figure], files: dict[str, list[str]], tr: Translator
) -> str:
    _ = tr.gettext
    made = _now()
    run = store.run(selection.run_id)
    language = (
        ""
        if tr.lang == ENGLISH.lang
        else " "
        + _("Language: {language} ({code}); the CSV files keep machine-readable values.").format(
            language=tr.name, code=tr.lang
        )
    )
    lines = [
        _("# Review pack: run {name} ({id})").format(name=md.escape(run.name), id=selection.run_id),
        "",
        _("Made {made} by {software} from the dashboard's current selection.").format(
            made=_made(tr, made), software=_version()
        )
        + language,
        "",
        _("## Decision: the refusal threshold"),
        "",
        _("Configuration **{label}**, threshold **t = {t}** ({source}).").format(
            label=md.escape(selection.configuration.label),
            t=tr.decimal_text(threshold_text(selection.threshold, 4)),
            source=md.escape(tr.rewrite(selection.threshold_source, SOURCES)),
        ),
        "",
    ]
    decision = latest_decision(store, selection.run_id, selection.configuration)
    if decision is not None and abs(decision.threshold - selection.threshold) < 1e-12:
        lines += [
            _("Saved by {author} on {when}.").format(
                author=md.escape(shown_author(decision.author)), when=tr.date(decision.created_at, seconds=False)
            ),
            "",
        ]
        if decision.note:
            lines += [_("Note saved with the decision: {note}").format(note=md.escape(decision.note)), ""]
        if decision.claim:
            lines += [md.escape(tr.rewrite(decision.claim_text(), SOURCES)), ""]
    lines += [_("### The threshold claim"), ""]
    try:
        claim: Claim | None = claim_of(store, selection.run_id, selection.configuration, *selection.claim_params)
    except ClaimError as exc:
        claim = None
        lines += [_("No threshold claim can be made: {reason}").format(reason=md.escape(exc)), ""]
    if claim is not None:
        lines += [md.escape(claim_caption(claim, tr)), "", md.escape(separability(claim, tr)), ""]
        # the same verdict as a deployment's meets_claim: bounds rounded safely, read with the chosen t
        check = check_of(store, selection.run_id, selection.configuration, claim, selection.threshold)
        lines += _verdict_lines(check, tr)
    frame = run_sweep(store, selection.run_id, selection.configuration)
    if len(frame):
        lines += [sentence_at(frame, selection.threshold, tr), ""]
        warning = ood_support(frame, selection.threshold, tr)
        if warning:
            lines += [_("**Warning:** {warning}").format(warning=warning), ""]
        most = refuses_most(frame, selection.threshold, claim, tr)
        if most:
            lines += [_("**Warning:** {warning}").format(warning=md.escape(most)), ""]
        table = gate_table(frame, selection.threshold)
        lines += [
            "| {} | {} | {} | {} | {} |".format(
                _("outcome"), _("queries"), _("of"), _("share"), _("95% Wilson interval")
            ),
            "|---|---:|---:|---:|---|",
        ]
        for outcome, queries, of, share, low, high in table.itertuples(index=False, name=None):
            shown = _("n/a") if of == 0 else tr.percent(share, 1)
            # the interval's ends are bounds: the low end rounded down, the high end up
            ends = f"{rate_lower_text(low).removesuffix('%')}–{rate_bound_text(high)}"
            interval = _("n/a") if of == 0 else tr.numbers_in(ends)
            lines.append(f"| {_(outcome)} | {queries} | {of} | {shown} | {interval} |")
        lines.append("")
    lines += [_("## Comparison"), ""]
    lines += _comparison_lines(store, selection, run.name, tr)
    lines += [_("## Files"), ""]
    for figure in figures:
        names = ", ".join(f"`{name}`" for name in files.get(figure.slug, []))
        lines += [f"- **{md.escape(figure.title)}**: {names}", f"  - {md.escape(figure.provenance.stamped().text())}"]
    axis = gate_axis(store, selection.run_id, selection.configuration)  # a run made elsewhere: its own score
    keeps = _(axis.keeps) if axis.column == "distance" else f"{_(axis.keeps)} ({axis.label})"
    lines += [
        "",
        _("## Methods"),
        "",
        _(
            "- recall@k: share of in-domain queries with a correct chunk (one whose text holds the whole "
            "answer) at rank k or better; MRR: mean of 1/rank of the first correct chunk, 0 when none."
        ),
        _("- Intervals: {method}.").format(method=_(INTERVAL_METHOD)),
        _(
            "- Paired comparison: {test}; ties are not counted; with the Holm switch on, "
            "p-values are Holm-adjusted over the pairs of the configurations compared."
        ).format(test=_(PAIRED_TEST)),
        _(
            "- The gate at t keeps, from a retriever's top 4 hits, those with {keeps}; nothing "
            "kept means NO ANSWER. Bluff: an out-of-domain query with a hit kept; lost answer: an in-domain "
            "query with a correct hit in the top 4 that the gate drops."
        ).format(keeps=keeps),
        _("- Every definition in full: docs/METHODS.md in the evalcore repository."),
        "",
    ]
    return "\n".join(lines)
