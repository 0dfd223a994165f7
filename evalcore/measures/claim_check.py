"""Whether one threshold meets a claim (METHODS.md "The threshold claim"), each side apart, and
why not in words.

:func:`meets_claim` reads a threshold ``t`` against a claim (a :class:`~evalcore.measures.claim.Claim`,
or its JSON as a decision stores it): on a distance axis the bluff claim holds for ``t <=
bluff_ok_up_to`` and the lost claim for ``t > lost_ok_above``; on a score axis ``t >
bluff_ok_up_to`` and ``t <= lost_ok_above``. A ``bounded`` side is True or False, an ``unbounded``
one True (every t meets it), a ``too_few`` one None (no claim). The bound it names is the one the
screens print, rounded on its safe side (:func:`evalcore.measures.rounding.bound_text`) with the
decimals ``t`` needs, so the printed ``t`` against the printed bound reads as the exact comparison.
Given the gate values, it counts the bluffs and lost answers at ``t``.

One function for every reader: a deployment's ``meets_claim`` (:mod:`evalcore.service.deployments`,
the API and the client), the Threshold screen's warning and the review pack. Pure computation:
:func:`evalcore.read.claims.check_of` gathers the gate values of a stored configuration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from evalcore.i18n import ENGLISH, Translator
from evalcore.measures.claim import AXES, Claim, ClaimError
from evalcore.measures.rounding import bound_text, rate_text, threshold_text

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    import numpy as np
    from numpy.typing import NDArray

    Values = Sequence[float] | NDArray[np.floating[Any]]


@dataclass(frozen=True, slots=True)
class ClaimCheck:
    """Whether one threshold ``t`` meets a claim (:func:`meets_claim`): the bluff and lost
    sides apart, each True, False or None (no claim on that side: too few questions, or no
    bound stored), with the bound it was compared with.

    ``bluff_bound`` / ``lost_bound`` are the bounds as every screen shows them: rounded on
    their safe side (:func:`evalcore.measures.rounding.bound_text`), with the decimals it takes
    for ``t`` to compare with the shown number as with the exact one; so ``t bluff_op
    bluff_bound`` read off the printed numbers gives ``bluff``, and a ``t`` shown as meeting
    the claim never fails a reader's check. ``bluff_bound_text`` is that number as printed.
    None for a side that is unbounded (every ``t`` meets it: ``True``) or has no claim.
    ``bluffs_at_t`` (of ``n_ood`` off-topic questions) and ``lost_at_t`` (of ``n_answerable``)
    count what the gate does at ``t``: None when the gate values were not given.
    """

    threshold: float
    axis: str
    bluff: bool | None
    lost: bool | None
    bluff_op: str
    lost_op: str
    bluff_bound: float | None
    lost_bound: float | None
    bluff_bound_text: str | None
    lost_bound_text: str | None
    max_bluff_rate: float
    max_lost_rate: float
    confidence: float
    n_ood: int
    n_answerable: int
    bluffs_at_t: int | None = None
    lost_at_t: int | None = None

    @property
    def met(self) -> bool | None:
        """False when either side fails, True when both hold, else None (a side without a claim)."""
        if self.bluff is False or self.lost is False:
            return False
        return True if self.bluff and self.lost else None

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict, with ``met``: ``meets_claim`` on a deployment."""
        return {"met": self.met, **asdict(self)}


def _side(status: Any, bound: Any, op: str, t: float) -> tuple[bool | None, float | None, str | None]:
    """(meets, shown bound, its text) of one side of a claim at ``t``."""
    if status == "unbounded":
        return True, None, None
    if status != "bounded" or isinstance(bound, bool) or not isinstance(bound, int | float):
        return None, None, None
    exact = float(bound)
    if not math.isfinite(exact):
        return None, None, None
    text = bound_text(exact, op, against=(t,))
    shown = float(text)
    meets = shown >= t if op == "<=" else (t > shown if op == ">" else None)
    exact_meets = t <= exact if op == "<=" else t > exact
    if meets is not exact_meets:  # bound_text's promise: the shown bound reads t as the exact one does
        raise ClaimError(f"the bound {exact!r} shown as {text} reads t = {t!r} otherwise")
    return exact_meets, shown, text


def _values(values: Values, name: str, higher_is_closer: bool) -> NDArray[np.float64]:
    """The gate values as a float array; ClaimError naming ``name`` for NaN or the wrong infinity."""
    import numpy as np

    a = np.asarray(values, dtype=float).ravel()
    wrong = math.inf if higher_is_closer else -math.inf
    if np.isnan(a).any() or (a == wrong).any():
        raise ClaimError(f"{name}: a gate value must be a finite number (or {-wrong}: no hit)")
    return a


def _field(claim: Mapping[str, Any], name: str) -> Any:
    if name not in claim:
        raise ClaimError(f"claim: no field {name!r}")
    return claim[name]


def _number_field(claim: Mapping[str, Any], name: str) -> float:
    value = _field(claim, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise ClaimError(f"claim: {name} is not a finite number ({str(value)[:40]!r})")
    return float(value)


def _count_field(claim: Mapping[str, Any], name: str) -> int:
    value = _field(claim, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ClaimError(f"claim: {name} is not a count ({str(value)[:40]!r})")
    return value


def meets_claim(
    claim: Claim | Mapping[str, Any],
    threshold: float,
    *,
    ood_min: Values | None = None,
    answerable_min: Values | None = None,
) -> ClaimCheck:
    """Whether ``threshold`` meets ``claim`` (a :class:`Claim`, or its JSON as a decision
    stores it), side by side (:class:`ClaimCheck`). Distance axis: the bluff claim holds for
    ``t <= bluff_ok_up_to``, the lost claim for ``t > lost_ok_above``; score axis: ``t >
    bluff_ok_up_to`` and ``t <= lost_ok_above``. An ``unbounded`` side holds for every t, a
    ``too_few`` side makes no claim (None). ``ood_min`` / ``answerable_min``: the gate values
    the claim was made from (:func:`threshold_claim`), to count the bluffs and lost answers at
    ``threshold``. ClaimError for a threshold that is no finite number, or a claim that lacks a
    field or names an unknown axis."""
    data: Mapping[str, Any] = claim.to_json() if isinstance(claim, Claim) else claim
    if not isinstance(data, Mapping):
        raise ClaimError(f"claim: not a claim but {type(data).__name__}")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise ClaimError(f"threshold must be a finite number; got {str(threshold)[:40]!r}")
    t = float(threshold)
    axis = _field(data, "axis")
    if axis not in AXES:
        raise ClaimError(f"claim: axis must be 'distance' or 'score', got {axis!r}")
    higher = axis == "score"
    bluff_op, lost_op = (">", "<=") if higher else ("<=", ">")
    bluff, bluff_bound, bluff_text = _side(_field(data, "bluff_status"), data.get("bluff_ok_up_to"), bluff_op, t)
    lost, lost_bound, lost_text = _side(_field(data, "lost_status"), data.get("lost_ok_above"), lost_op, t)
    bluffs_at = lost_at = None
    n_ood, n_answerable = _count_field(data, "n_ood"), _count_field(data, "n_answerable")
    if ood_min is not None:
        ood = _values(ood_min, "off-topic gate values", higher)
        bluffs_at, n_ood = int((ood >= t).sum() if higher else (ood < t).sum()), len(ood)
    if answerable_min is not None:
        correct = _values(answerable_min, "answerable gate values", higher)
        kept = int((correct >= t).sum() if higher else (correct < t).sum())
        lost_at, n_answerable = len(correct) - kept, len(correct)
    return ClaimCheck(
        threshold=t,
        axis=str(axis),
        bluff=bluff,
        lost=lost,
        bluff_op=bluff_op,
        lost_op=lost_op,
        bluff_bound=bluff_bound,
        lost_bound=lost_bound,
        bluff_bound_text=bluff_text,
        lost_bound_text=lost_text,
        max_bluff_rate=_number_field(data, "max_bluff_rate"),
        max_lost_rate=_number_field(data, "max_lost_rate"),
        confidence=_number_field(data, "confidence"),
        n_ood=n_ood,
        n_answerable=n_answerable,
        bluffs_at_t=bluffs_at,
        lost_at_t=lost_at,
    )


def outside_claim(check: ClaimCheck | None, tr: Translator = ENGLISH) -> str | None:
    """Why ``check``'s threshold lies outside its claim, one sentence per side it fails, naming
    the bound (rounded on its safe side, as :func:`meets_claim` compared
    it) and what the gate does there: "t = 0.381 lies outside the claim 'bluffs <= 5%': its bound
    is t <= 0.213, and at t = 0.381, 46 of 190 off-topic questions bluff." None when it fails no
    side, or for no check. ``tr``: the dashboard's language (figures keep their digits)."""
    if check is None or check.met is not False:
        return None
    _ = tr.gettext
    t = threshold_text(check.threshold)
    parts: list[str] = []
    fields: dict[str, object]
    if check.bluff is False:
        fields = {
            "t": t,
            "alpha": rate_text(check.max_bluff_rate),
            "op": check.bluff_op,
            "bound": check.bluff_bound_text,
        }
        if check.bluffs_at_t is None:
            text = _("t = {t} lies outside the claim 'bluffs <= {alpha}': its bound is t {op} {bound}.")
        else:
            fields |= {"k": check.bluffs_at_t, "n": check.n_ood}
            text = tr.ngettext(
                "t = {t} lies outside the claim 'bluffs <= {alpha}': its bound is t {op} {bound}, and at t = {t}, "
                "{k} of {n} off-topic questions bluffs.",
                "t = {t} lies outside the claim 'bluffs <= {alpha}': its bound is t {op} {bound}, and at t = {t}, "
                "{k} of {n} off-topic questions bluff.",
                check.bluffs_at_t,
            )
        parts.append(text.format(**fields))
    if check.lost is False:
        fields = {"t": t, "beta": rate_text(check.max_lost_rate), "op": check.lost_op, "bound": check.lost_bound_text}
        if check.lost_at_t is None:
            text = _("t = {t} lies outside the claim 'lost <= {beta}': its bound is t {op} {bound}.")
        else:
            fields |= {"k": check.lost_at_t, "n": check.n_answerable}
            text = tr.ngettext(
                "t = {t} lies outside the claim 'lost <= {beta}': its bound is t {op} {bound}, and at t = {t}, "
                "{k} of {n} answerable questions loses its answer.",
                "t = {t} lies outside the claim 'lost <= {beta}': its bound is t {op} {bound}, and at t = {t}, "
                "{k} of {n} answerable questions lose their answer.",
                check.lost_at_t,
            )
        parts.append(text.format(**fields))
    return tr.numbers_in(" ".join(parts))
