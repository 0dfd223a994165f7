"""What a :class:`~evalcore.read.compare.Comparison` says, in the sentences a reader wants
first: which configuration is best, how sure we are, and whether it beats the runner-up
(:func:`best`); one pair's detail (:func:`pair_sentence`); the pairs that differ
significantly (:func:`significance_text`); the decided configuration among those compared
(:func:`decided_sentence`). Every figure comes from the comparison's matrix and hits, so a
sentence says exactly what its cell shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.i18n import ENGLISH, Translator
from evalcore.measures.rounding import safe_decimal
from evalcore.measures.stats import ALPHA, PAIRED_TEST, Interval, p_relation, sample_statement

if TYPE_CHECKING:
    from evalcore.read.compare import Comparison
    from evalcore.records import RunConfiguration


def pair_sentence(comparison: Comparison, row: str, column: str, tr: Translator = ENGLISH) -> str:
    """The detail of one cell, its p first as the cell shows it, the unadjusted p named as such."""
    _ = tr.gettext
    cell = comparison.cell(row, column)
    p = f"{_(comparison.p_name)} {p_relation(cell['p_text'])}"
    if comparison.adjusted:
        p += _(" (unadjusted p {p})").format(p=p_relation(cell["p_value_text"]))
    verdict = {
        "better": _("{row} is significantly better").format(row=row),
        "worse": _("{row} is significantly worse").format(row=row),
        "no clear difference": _("no significant difference"),
    }[cell["verdict"]]
    return tr.numbers_in(
        _(
            "{row} against {column} at hit@{k}: +{wins} won / -{losses} lost, {ties} ties; {p}: {verdict} "
            "(alpha {alpha}; {test})."
        ).format(
            **{k: cell[k] for k in ("wins", "losses", "ties")},
            row=row,
            column=column,
            k=comparison.k,
            p=p,
            verdict=verdict,
            alpha=f"{ALPHA:g}",
            test=_(PAIRED_TEST),
        )
    )


@dataclass(frozen=True, slots=True)
class Best:
    """The best side by recall@k, its interval, and how it fares against the runner-up."""

    label: str
    recall: float
    interval: Interval
    successes: int
    n: int
    runner_up: str | None
    runner_up_recall: float | None
    wins: int
    losses: int
    p_text: str
    significant: bool
    tied: tuple[str, ...]

    def sentence(self, k: int, p_name: str, tr: Translator = ENGLISH) -> str:
        _ = tr.gettext
        low, high = interval_ends(self.interval.low, self.interval.high)
        figures = dict(k=k, label=self.label, recall=f"{self.recall:.3f}", low=low, high=high, n=self.n)  # noqa: C408
        head = _(
            "Best at hit@{k}: {label}, recall@{k} = {recall} (95% Wilson interval {low}–{high}; {successes} of {n} "
            "queries)."
        ).format(successes=self.successes, **figures)
        if self.runner_up is None:
            return tr.numbers_in(head)
        if self.tied:
            head = _(
                "Best at hit@{k}: {label}, tied with {others} at recall@{k} = {recall} (95% Wilson interval "
                "{low}–{high}; {successes} of {n} queries)."
            ).format(others=", ".join(self.tied), successes=self.successes, **figures)
        if self.wins == 0 and self.losses == 0:
            return tr.numbers_in(
                head
                + " "
                + _(
                    "Against the runner-up {runner_up}: no query differs at hit@{k} (each finds exactly the queries "
                    "the other finds); these queries cannot tell the two apart."
                ).format(runner_up=self.runner_up, k=k)
            )
        p = f"{_(p_name)} {p_relation(self.p_text)}"
        recall = f"{self.runner_up_recall:.3f}"
        against = _("Against the runner-up {runner_up} (recall@{k} = {recall}): +{wins}/-{losses}, {p}").format(
            runner_up=self.runner_up, k=k, recall=recall, wins=self.wins, losses=self.losses, p=p
        )
        if self.significant:
            return tr.numbers_in(_("{head} {against}: significantly better.").format(head=head, against=against))
        return tr.numbers_in(
            _("{head} {against}: not significantly better; these queries cannot tell the two apart.").format(
                head=head, against=against
            )
        )


def best(comparison: Comparison) -> Best | None:
    """The side with the highest recall@k (ties: the first in order) and its comparison with
    the runner-up, read from the same matrix (the same p as its cell). The runner-up is the
    best side of another configuration (another strategy or retriever): the same
    configuration of another run is the runner-up only when every compared side is that
    configuration. None without sides."""
    hits = comparison.hits
    if hits.empty:
        return None
    order = hits.assign(_pos=range(len(hits))).sort_values(["successes", "_pos"], ascending=[False, True])
    top = order.iloc[0]
    interval = Interval(float(top["low"]), float(top["high"]))
    if len(order) < 2:
        return Best(
            top["label"],
            float(top["recall"]),
            interval,
            int(top["successes"]),
            int(top["n"]),
            None,
            None,
            0,
            0,
            "",
            False,
            (),
        )
    # the runner-up is another configuration: the same strategy and retriever of another run
    # (the demo run twice) is skipped unless nothing else is compared
    others = order.iloc[1:]
    different = others[others["config"] != top["config"]]
    second = (different if len(different) else others).iloc[0]
    cell = comparison.cell(top["label"], second["label"])
    tied = tuple(order.loc[order["successes"] == top["successes"], "label"].iloc[1:])
    return Best(
        top["label"],
        float(top["recall"]),
        interval,
        int(top["successes"]),
        int(top["n"]),
        second["label"],
        float(second["recall"]),
        int(cell["wins"]),
        int(cell["losses"]),
        cell["p_text"],
        bool(cell["significant"]) and cell["wins"] > cell["losses"],
        tied,
    )


def interval_ends(low: float, high: float, digits: int = 3) -> tuple[str, str]:
    """An interval's ends in words, each a bound rounded on its safe side: the low end down, the
    high end up (0.7006 reads 0.700, 0.9114 reads 0.912), so the shown interval holds the exact one."""

    def end(x: float, op: str) -> str:
        return format(safe_decimal(x, op, digits), "f") if math.isfinite(x) else f"{x:.{digits}f}"

    return end(low, "<="), end(high, ">=")


def decided_sentence(comparison: Comparison, decided: RunConfiguration, top: Best | None) -> str:
    """The decided configuration named in the comparison: its hit@k with the Wilson interval
    and how it stands against the best compared (the same matrix cell, the same p)."""
    label = comparison.labels[comparison.sides.index(decided)]
    row = comparison.hits[comparison.hits["label"] == label].iloc[0]
    low, high = interval_ends(float(row["low"]), float(row["high"]))
    head = (
        f"The decided configuration, {label}: hit@{comparison.k} {float(row['recall']):.3f} "
        f"[{low}, {high}] ({int(row['successes'])} of {int(row['n'])})"
    )
    if top is None or top.label == label:
        return head + f"; it is the best of the {len(comparison.labels)} compared."
    cell = comparison.cell(top.label, label)
    verdict = str(cell["verdict"])
    return (
        head + f"; against the best, {top.label}: {int(cell['wins'])} queries only {top.label} finds, "
        f"{int(cell['losses'])} only {label} finds ({comparison.p_name} {cell['p_text']}: {verdict})."
    )


def significance_text(comparison: Comparison, tr: Translator = ENGLISH) -> str:
    """A plain sentence: which pairs differ significantly at hit@k, and what n can detect."""
    _ = tr.gettext
    matrix = comparison.matrix
    k = comparison.k
    if matrix.empty:
        return _("Only one configuration: nothing to compare.")
    sig = matrix[matrix["significant"] & (matrix["wins"] > matrix["losses"])]
    if sig.empty:
        head = _(
            "At hit@{k}, no pair of these {n} configurations differs significantly ({p_name} < {alpha}, {test})."
        ).format(k=k, n=len(comparison.sides), p_name=_(comparison.p_name), alpha=f"{ALPHA:g}", test=_(PAIRED_TEST))
    else:
        parts = [
            _("{row} beats {column} (+{wins}/-{losses}, p {p})").format(
                row=r, column=c, wins=w, losses=losses, p=p_relation(p)
            )
            for r, c, w, losses, p in zip(
                sig["row"], sig["column"], sig["wins"], sig["losses"], sig["p_text"], strict=True
            )
        ]
        head = _("At hit@{k}, significant with {p_name} < {alpha}: {pairs}.").format(
            k=k, p_name=_(comparison.p_name), alpha=f"{ALPHA:g}", pairs="; ".join(parts)
        )
    n = comparison.n
    return tr.numbers_in(f"{head} {sample_statement(n, tr=tr)}" if n >= 1 else head)
