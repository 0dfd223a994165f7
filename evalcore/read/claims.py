"""The threshold claim of stored configurations (METHODS.md "The threshold claim"): each query's gate values
read from the store, :func:`evalcore.measures.claim.threshold_claim` and the held-out check on them,
per-segment figures at a threshold, and the claim's sentences for screens and captions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from evalcore.configurations import info
from evalcore.errors import EmptyClaimSet
from evalcore.i18n import ENGLISH, N_, Translator
from evalcore.measures.claim import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_CONFIDENCE,
    POOR_SEPARATION,
    Claim,
    ClaimError,
    threshold_claim,
)
from evalcore.measures.claim_check import ClaimCheck, meets_claim
from evalcore.measures.claim_held_out import held_out, with_held_out
from evalcore.measures.rounding import rate_bound_text, rate_lower_text, rate_text, safe_decimal, threshold_text
from evalcore.measures.stats import wilson_interval
from evalcore.measures.threshold import DEFAULT_TOP, state_at
from evalcore.read.refs import parse_ref, resolve_run
from evalcore.read.runs import configurations as all_configurations
from evalcore.records import Configuration as Config

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

    from evalcore.records import Configuration, Run
    from evalcore.store import Store


@dataclass(frozen=True)
class GateValues:
    """Per scored query of one configuration: ``frame`` with query_id, domain, group_id,
    variant, kind, first (closest top-4 gate value; inf / -inf: no hit) and first_correct
    (closest correct one; inf / -inf: not answerable); ``axis`` ``distance`` or ``score``."""

    frame: pd.DataFrame
    axis: str

    @property
    def higher_is_closer(self) -> bool:
        return self.axis == "score"

    def _column(self, name: str, domain: str, answerable: bool = False) -> NDArray[np.float64]:
        import numpy as np

        rows = self.frame[self.frame["domain"] == domain]
        values = rows[name].to_numpy(dtype=float)
        return values[np.isfinite(values)] if answerable else values

    @property
    def ood_min(self) -> NDArray[np.float64]:
        return self._column("first", "out")

    @property
    def in_domain_min(self) -> NDArray[np.float64]:
        return self._column("first", "in")

    @property
    def answerable_min(self) -> NDArray[np.float64]:
        return self._column("first_correct", "in", answerable=True)


def gate_values(store: Store, run_id: str, configuration: Configuration) -> GateValues:
    """Each scored query's gate values for ``configuration`` (one store query; the same
    minima :func:`evalcore.read.sweeps.run_sweep` sweeps)."""
    import numpy as np

    gate = info(store, run_id, configuration.strategy, configuration.retriever).axis
    value = f"h.{gate.column}"
    closest = "max" if gate.higher_is_closer else "min"
    df = store.query(
        f"""
        SELECT r.query_id, r.domain, q.group_id, q.variant, q.kind,
               {closest}({value}) AS first, {closest}({value}) FILTER (WHERE h.correct) AS first_correct
        FROM results r
        JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
        LEFT JOIN hits h ON h.run_id = r.run_id AND h.strategy = r.strategy AND h.retriever = r.retriever
                        AND h.query_id = r.query_id AND h.rank <= ?
        WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid
        GROUP BY r.query_id, r.domain, q.group_id, q.variant, q.kind
        ORDER BY r.query_id
        """,
        [DEFAULT_TOP, run_id, configuration.strategy, configuration.retriever],
    )
    missing = -np.inf if gate.higher_is_closer else np.inf
    for name in ("first", "first_correct"):
        df[name] = df[name].astype("float64").fillna(missing)
    df["group_id"] = df["group_id"].fillna(df["query_id"])
    return GateValues(df, gate.column)


def claim_of(
    store: Store,
    run_id: str,
    configuration: Configuration,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
    splits: int | None = None,
    seed: int = 0,
) -> Claim:
    """The claim of one stored configuration, with the held-out check when ``splits``.

    ClaimError naming the run and configuration when it has no off-topic query or no
    answerable one, or naming the option that lies outside (0, 1)."""
    values = gate_values(store, run_id, configuration)
    where = f"run {run_id}, configuration {configuration.label}"
    try:
        claim = threshold_claim(
            values.ood_min,
            values.answerable_min,
            values.in_domain_min,
            axis=values.axis,
            alpha=alpha,
            beta=beta,
            confidence=confidence,
        )
    except EmptyClaimSet as exc:  # name the run
        raise EmptyClaimSet(f"{where}: {exc}") from None
    claim = replace(claim, configuration=configuration.label)
    if splits:
        inside = values.frame[values.frame["domain"] == "in"]
        check = held_out(
            values.ood_min,
            inside["first_correct"].to_numpy(dtype=float),
            [str(g) for g in inside["group_id"]],
            axis=values.axis,
            alpha=alpha,
            beta=beta,
            confidence=confidence,
            splits=splits,
            seed=seed,
        )
        claim = with_held_out(claim, check)
    return claim


def check_of(
    store: Store, run_id: str, configuration: Configuration, claim: Claim | dict[str, Any], threshold: float
) -> ClaimCheck:
    """:func:`evalcore.measures.claim_check.meets_claim` of ``threshold`` against ``claim`` (a Claim, or
    the JSON a decision stores), with the bluffs and lost answers at ``threshold`` counted over the
    stored configuration's gate values (one store query). ClaimError as meets_claim."""
    return check_at(gate_values(store, run_id, configuration), claim, threshold)


def check_at(values: GateValues, claim: Claim | dict[str, Any], threshold: float) -> ClaimCheck:
    """:func:`check_of` on gate values already read (:func:`gate_values`): no store query."""
    return meets_claim(claim, threshold, ood_min=values.ood_min, answerable_min=values.answerable_min)


def claims(
    store: Store,
    run_id: str,
    configurations: list[Configuration] | None = None,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
    splits: int | None = None,
) -> list[Claim]:
    """:func:`claim_of` for each configuration (every configuration of the run by default)."""
    chosen = configurations if configurations is not None else all_configurations(store, run_id)
    return [claim_of(store, run_id, c, alpha, beta, confidence, splits) for c in chosen]


def claims_of_ref(
    store: Store,
    reference: str,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
    splits: int | None = None,
) -> tuple[Run, list[Claim]]:
    """The complete run ``reference`` names (``RUN`` or ``RUN:CONFIG``, as
    :func:`evalcore.read.refs.parse_ref` reads it) and the claim of each configuration it names
    (all of them without ``:CONFIG``): what ``evalcore threshold`` and ``GET /runs/{ref}/claim``
    answer. ClaimError naming the configurations the run has when it lacks the one named."""
    ref = parse_ref(reference)
    run = resolve_run(store, ref.run)
    known = all_configurations(store, run.run_id)
    if ref.configuration is None:
        chosen = known
    else:
        wanted = Config.parse(ref.configuration)
        if wanted not in known:
            raise ClaimError(
                f"run {run.run_id} has no configuration {wanted.label} (it has {', '.join(c.label for c in known)})"
            )
        chosen = [wanted]
    return run, claims(store, run.run_id, chosen, alpha, beta, confidence, splits)


# --- words --------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _plain(value: Decimal) -> str:
    """A decimal as its digits (``0.70``)."""
    return format(value, "f")


def claim_sentence(claim: Claim, tr: Translator = ENGLISH) -> str:
    """The claim in one sentence a product manager can sign, e.g. "t <= 0.470 keeps bluffs <=
    5% with 95% confidence; there (t = 0.470), 14% [11%, 18%] of answerable questions lose their
    answer (14 of 98; the claim 'lost <= 20%' holds for t > 0.300)." Or what stands in the way.
    Bounds are rounded on their safe side, with the decimals the recommendation needs
    (:meth:`Claim.bluff_region`). ``tr``: the dashboard's language (figures keep their digits)."""
    _ = tr.gettext
    conf = rate_text(claim.confidence)
    if claim.bluff_status == "too_few":
        return claim.problem(tr) or ""
    if claim.bluff_status == "unbounded":
        head = _("Every threshold keeps bluffs <= {alpha} with {confidence} confidence").format(
            alpha=rate_text(claim.max_bluff_rate), confidence=conf
        )
    else:
        head = _("{region} keeps bluffs <= {alpha} with {confidence} confidence").format(
            region=_(claim.bluff_region()), alpha=rate_text(claim.max_bluff_rate), confidence=conf
        )
    if claim.feasible and claim.lost is not None and claim.recommended is not None:
        low, high = wilson_interval(claim.lost, claim.n_answerable)
        return tr.numbers_in(
            _(
                "{head}; there (t = {t}), {share} [{low}, {high}] of answerable questions lose their answer "
                "({lost} of {answerable}; the claim 'lost <= {beta}' holds for {region})."
            ).format(
                head=head,
                t=threshold_text(claim.recommended),
                share=_pct(claim.lost / claim.n_answerable),
                low=rate_lower_text(low, 0),  # an interval's ends are bounds: rounded on their safe side
                high=rate_bound_text(high, 0),
                lost=claim.lost,
                answerable=claim.n_answerable,
                beta=rate_text(claim.max_lost_rate),
                region=_(claim.lost_region()),
            )
        )
    problem = claim.problem(tr) or ""
    return tr.numbers_in(_("{head}; but {problem}").format(head=head, problem=f"{problem[:1].lower()}{problem[1:]}"))


REGIONS = (N_("every t"), N_("no t"))  #: the words of a region without a bound (translated where shown)


def separability(claim: Claim, tr: Translator = ENGLISH) -> str:
    """The separability verdict in words, with the AUC and its interval."""
    _ = tr.gettext
    if math.isnan(claim.auc):
        return _("Separability cannot be measured (no in-domain or no off-topic query).")
    figure = f"AUC {claim.auc:.2f}"
    if not math.isnan(claim.auc_low):
        figure += _(", 95% DeLong interval [{low}, {high}]").format(
            low=_plain(safe_decimal(claim.auc_low, "<=", 2)),  # the interval's ends on their safe side
            high=_plain(safe_decimal(claim.auc_high, ">=", 2)),
        )
    if claim.auc < POOR_SEPARATION:
        return tr.numbers_in(
            _(
                "Real and off-topic questions barely separate on this corpus ({figure}): no threshold "
                "separates them well; any threshold either refuses many real questions or answers many "
                "off-topic ones. A retriever that separates better (or a different corpus) is needed."
            ).format(figure=figure)
        )
    return tr.numbers_in(
        _(
            "{figure}: the chance that an off-topic question's nearest hit is farther than a real "
            "question's is {share}."
        ).format(figure=figure, share=f"{claim.auc:.0%}")
    )


def caption(claim: Claim | None, tr: Translator = ENGLISH) -> str:
    """A one-line statement of the claim for exports and the review pack."""
    _ = tr.gettext
    if claim is None:
        return _("No threshold claim (no off-topic or no answerable question).")
    head = _(
        "Claim ({configuration}, {n_ood} off-topic / {n_answerable} answerable questions, "
        "alpha {alpha}, beta {beta}, confidence {confidence}): bluff {bluff}, lost {lost}, {feasible}."
    ).format(
        configuration=claim.configuration,
        n_ood=claim.n_ood,
        n_answerable=claim.n_answerable,
        alpha=repr(claim.max_bluff_rate),
        beta=repr(claim.max_lost_rate),
        confidence=repr(claim.confidence),
        bluff=_(claim.bluff_status),
        lost=_(claim.lost_status),
        feasible=_("feasible") if claim.feasible else _("not feasible"),
    )
    return f"{tr.numbers_in(head)} {claim_sentence(claim, tr)}"


STATUSES = (N_("bounded"), N_("unbounded"), N_("too_few"))  #: a claim side's status words


def band(claim: Claim | None, tr: Translator = ENGLISH) -> tuple[float, float, str] | None:
    """(from, to, words) of the thresholds where both claims hold (a feasible claim with both
    sides bounded), for the sweep chart; None otherwise. Distance axis: ``from < t <= to``
    (from = lost_ok_above, to = bluff_ok_up_to); score axis, the same form (the bluff claim holds
    strictly above bluff_ok_up_to, the lost claim at or below lost_ok_above): from =
    bluff_ok_up_to, to = lost_ok_above. The numbers are exact; the words round both ends inward
    (their safe side)."""
    if claim is None or not claim.feasible or claim.bluff_ok_up_to is None or claim.lost_ok_above is None:
        return None
    low, high = (
        (claim.bluff_ok_up_to, claim.lost_ok_above)
        if claim.higher_is_closer
        else (claim.lost_ok_above, claim.bluff_ok_up_to)
    )
    # in words, both ends rounded inward (the low end up, the high end down)
    low_text, high_text = (
        (claim.bluff_bound_text(), claim.lost_bound_text())
        if claim.higher_is_closer
        else (claim.lost_bound_text(), claim.bluff_bound_text())
    )
    words = tr.numbers_in(
        tr.gettext(
            "the claim (bluffs <= {alpha} with {confidence} confidence, lost <= {beta}; {n_ood} off-topic, "
            "{n_answerable} answerable) holds for {low} < t <= {high}"
        ).format(
            alpha=rate_text(claim.max_bluff_rate),
            confidence=rate_text(claim.confidence),
            beta=rate_text(claim.max_lost_rate),
            n_ood=claim.n_ood,
            n_answerable=claim.n_answerable,
            low=low_text,
            high=high_text,
        )
    )
    return low, high, words


def band_of(
    store: Store,
    run_id: str,
    configuration: Configuration,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float, str] | None:
    """:func:`band` of the stored configuration's claim (None when no claim can be made)."""
    try:
        return band(claim_of(store, run_id, configuration, alpha, beta, confidence))
    except ClaimError:
        return None


def claim_segments(gv: GateValues, threshold: float) -> pd.DataFrame:
    """The gate at ``threshold`` per segment, with 95% Wilson intervals: off-topic queries by
    ``kind`` (near / far: the bluff rate) and in-domain queries by ``variant`` (the share
    answered from a right source and the lost rate over the answerable ones). Columns:
    segment, group, queries, rate (what), share, wilson low, wilson high."""
    import pandas as pd

    df = gv.frame
    higher = gv.higher_is_closer

    def kept(values: pd.Series[Any]) -> pd.Series[bool]:
        return values >= threshold if higher else values < threshold

    rows: list[tuple[str, str, int, str, int]] = []
    out = df[df["domain"] == "out"]
    for kind, part in sorted(out.groupby(out["kind"].fillna("(none)")), key=lambda kv: str(kv[0])):
        rows.append((f"off-topic: {kind}", "bluff rate", len(part), "bluffs", int(kept(part["first"]).sum())))
    inside = df[df["domain"] == "in"]
    for variant, part in sorted(inside.groupby(inside["variant"].fillna("(none)")), key=lambda kv: str(kv[0])):
        answerable = part[part["first_correct"].map(math.isfinite)]
        rows.append(
            (
                f"in-domain: {variant}",
                "answered from a right source",
                len(part),
                "answered",
                int(kept(part["first_correct"]).sum()),
            )
        )
        if len(answerable):
            rows.append(
                (
                    f"in-domain: {variant}",
                    "lost rate (answerable)",
                    len(answerable),
                    "lost",
                    int((~kept(answerable["first_correct"])).sum()),
                )
            )
    frame = pd.DataFrame(rows, columns=["segment", "rate", "of", "counted", "queries"])
    frame["share"] = frame["queries"] / frame["of"]
    bounds = [wilson_interval(int(k), int(n)) for k, n in zip(frame["queries"], frame["of"], strict=True)]
    frame["wilson low"] = [b.low for b in bounds]
    frame["wilson high"] = [b.high for b in bounds]
    return frame[["segment", "rate", "queries", "of", "share", "wilson low", "wilson high"]]


def coverage(sweep_df: pd.DataFrame) -> pd.DataFrame:
    """The sweep read on a coverage axis: per step, the share of real (in-domain) questions
    answered (``coverage``), the share answered from a right source and the bluff rate.
    Columns: threshold, coverage, answered_correct_share, bluff_rate."""
    import numpy as np
    import pandas as pd

    n_in = sweep_df["in_domain"].to_numpy(dtype=float)
    answered = n_in - sweep_df["refused"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame(
            {
                "threshold": sweep_df["threshold"].to_numpy(dtype=float),
                "coverage": answered / n_in,
                "answered_correct_share": sweep_df["answered_correct"].to_numpy(dtype=float) / n_in,
                "bluff_rate": sweep_df["bluff_rate"].to_numpy(dtype=float),
            }
        )
    return frame


def coverage_at(sweep_df: pd.DataFrame, threshold: float) -> float | None:
    """The share of real (in-domain) questions the gate answers at ``threshold``."""
    c = state_at(sweep_df, threshold)
    return (c.in_domain - c.refused) / c.in_domain if c.in_domain else None


def refuses_most(sweep_df: pd.DataFrame, threshold: float, claim: Claim | None, tr: Translator = ENGLISH) -> str | None:
    """A warning when the gate at ``threshold`` refuses most real questions (more than half of
    the in-domain ones), saying why; None otherwise."""
    c = state_at(sweep_df, threshold)
    if c.in_domain == 0 or c.refused * 2 <= c.in_domain:
        return None
    _ = tr.gettext
    why = (
        " "
        + _(
            "Real and off-topic questions overlap (AUC {auc}): a threshold low enough to refuse "
            "the off-topic ones refuses the real ones too."
        ).format(auc=f"{claim.auc:.2f}")
        if claim is not None and not math.isnan(claim.auc)
        else ""
    )
    return tr.numbers_in(
        _(
            "At t = {t} the gate refuses {share} of real questions ({refused} of {real}) "
            "and loses {lost} of {answerable} answerable ones."
        ).format(
            t=threshold_text(threshold),
            share=_pct(c.refused / c.in_domain),
            refused=c.refused,
            real=c.in_domain,
            lost=c.lost,
            answerable=c.answerable,
        )
        + why
    )
