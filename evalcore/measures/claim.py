"""A refusal threshold with a statistical guarantee (METHODS.md "The threshold claim"): the threshold claim.

Pure computation over plain arrays of gate values; nothing here reads the store
(:mod:`evalcore.read.claims` gathers the arrays of a stored configuration).

For one configuration and its gate (top 4, keep ``distance < t``; on a score axis where a
higher score is closer, keep ``score >= t``):

- ``ood_min``: per off-topic query, ``m_q``, the gate value of its closest top-4 hit (the
  smallest distance; on a score axis the largest score; ``inf`` / ``-inf`` when it has no hit);
- ``answerable_min``: per *answerable* in-domain query (a correct hit in its top 4), ``c_q``,
  the gate value of its closest correct top-4 hit;
- ``in_domain_min``: per in-domain query (answerable or not), the gate value of its closest
  top-4 hit (``inf`` / ``-inf`` when it has no hit).

Distance axis: ``bluffs(t) = #{m_q < t}``, ``lost(t) = #{c_q >= t}``.

- **Bluff bound.** ``k* = max{k >= 0 : BinomCDF(k; n_ood, alpha) <= delta}`` (``delta = 1 -
  confidence``). None: ``too_few`` and ``ood_needed = ceil(ln delta / ln(1 - alpha))``;
  ``k* + 1 > n_ood``: ``unbounded``; else ``bounded`` and ``bluff_ok_up_to`` = the
  ``(k*+1)``-th smallest ``m_q``: every ``t <= bluff_ok_up_to`` has at most ``k*`` bluffs.
- **Lost bound.** ``j* = max{j >= 0 : BinomCDF(j; n_answerable, beta) <= delta}``, same
  statuses; ``lost_ok_above`` = the ``(j*+1)``-th largest ``c_q``: every ``t >
  lost_ok_above`` loses at most ``j*`` answers.
- **Feasible** when neither side is ``too_few`` and ``lost_ok_above < bluff_ok_up_to`` (an
  unbounded side sets no limit); ``recommended`` = ``bluff_ok_up_to`` rounded down to the
  slider's grid (0.001) when that still lies above ``lost_ok_above``, else ``bluff_ok_up_to``
  itself (an unbounded bluff side: the grid value above every observed one, keeping all).

Score axis (higher = closer), every inequality mirrored: ``bluffs(t) = #{m_q >= t}``,
``lost(t) = #{c_q < t}``; ``bluff_ok_up_to`` = the ``(k*+1)``-th *largest* ``m_q`` and the
bluff claim holds for every ``t`` strictly *above* it (the gate keeps ``score >= t``, so a
hit at exactly that score is kept); ``lost_ok_above`` = the ``(j*+1)``-th *smallest*
``c_q`` and the lost claim holds for every ``t`` at or *below* it. Feasible when
``bluff_ok_up_to < lost_ok_above``; ``recommended`` = the smallest grid value (0.001)
above ``bluff_ok_up_to`` when it is at most ``lost_ok_above``, else the smallest observed
gate value above ``bluff_ok_up_to`` (every ``t`` in between gives the same counts), which is
at most ``lost_ok_above`` when feasible.

**In words**, a bound is rounded only on its safe side (:mod:`evalcore.measures.rounding`):
``t <= x`` shows ``x`` rounded down, ``t > x`` rounded up, so that the shown value read
back meets the claim; the exact values stay in the fields (and ``--json``). The held-out
check is :mod:`evalcore.measures.claim_held_out`.

**Meeting the claim.** :func:`evalcore.measures.claim_check.meets_claim` reads one threshold
against a claim, each side apart, with the bound as the screens print it.

**Separability.** ``auc = P(m_ood > m_in) + P(m_ood = m_in) / 2`` over every in-domain query
(on a score axis ``P(m_ood < m_in) + ...``): Mann-Whitney ``U / (n_in n_ood)``; its 95%
interval is DeLong's (normal approximation with DeLong's variance, clipped to [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import ClaimError as ClaimError  # defined with the other errors; read here too
from evalcore.errors import EmptyClaimSet
from evalcore.i18n import ENGLISH
from evalcore.measures.rounding import bound_text, grid_above, grid_at_or_below, rate_bound_text, rate_text

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import NDArray

    from evalcore.i18n import Translator

    Values = Sequence[float] | NDArray[np.floating[Any]]

DEFAULT_ALPHA = 0.05  #: max bluff rate
DEFAULT_BETA = 0.20  #: max lost rate
DEFAULT_CONFIDENCE = 0.95  #: 1 - delta
#: The smallest max bluff or lost rate a claim is made for: below it no question set of any
#: size could support the claim (a set of ln(1/delta) / rate questions, none failing), and the
#: figures would leave what a float holds (1e-320: ln(1 - rate) is a subnormal, its quotient infinite).
MIN_RATE = 1e-6
DEFAULT_SPLITS = 200  #: held-out splits on the screen
#: Below this AUC the screen says no threshold separates real from off-topic questions well.
POOR_SEPARATION = 0.7
AXES = ("distance", "score")
#: How the claim is computed (stored with a decision, named in captions and exports).
METHOD = (
    "risk-controlling threshold: exact one-sided binomial bound (Clopper-Pearson) on the bluff "
    "and lost rates; AUC = Mann-Whitney U / (n_in n_ood) with a 95% DeLong interval"
)
AUC_METHOD = "DeLong (normal approximation, clipped to [0, 1])"

STATUSES = ("too_few", "unbounded", "bounded")


@dataclass(frozen=True, slots=True)
class Claim:
    """The threshold claim of one configuration; its fields are the keys of
    ``evalcore threshold --json`` (see the module docstring for each definition).

    ``bluffs_allowed`` / ``lost_allowed`` are ``k*`` / ``j*`` (None when ``too_few``);
    ``best_bluff_rate`` / ``best_lost_rate`` the smallest rate the set supports at this
    confidence (zero bluffs or lost: ``1 - delta ** (1 / n)``); the gate's counts
    (``bluffs`` ... ``answered_wrong``) are at ``recommended`` (None when not feasible).
    The ``held_out_*`` fields are filled by :func:`with_held_out`.
    """

    configuration: str | None
    axis: str
    n_ood: int
    n_in_domain: int
    n_answerable: int
    confidence: float
    max_bluff_rate: float
    bluff_status: str
    bluff_ok_up_to: float | None
    ood_needed: int | None
    bluffs_allowed: int | None
    best_bluff_rate: float
    max_lost_rate: float
    lost_status: str
    lost_ok_above: float | None
    answerable_needed: int | None
    lost_allowed: int | None
    best_lost_rate: float
    feasible: bool
    recommended: float | None
    bluffs: int | None
    lost: int | None
    refused: int | None
    answered_correct: int | None
    answered_wrong: int | None
    auc: float
    auc_low: float
    auc_high: float
    auc_method: str
    method: str
    splits: int | None = None
    held_out_splits_used: int | None = None
    held_out_share: float | None = None
    held_out_bluff_rate: float | None = None
    held_out_lost_rate: float | None = None

    @property
    def higher_is_closer(self) -> bool:
        return self.axis == "score"

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (NaN becomes None)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            out[key] = value
        return out

    def _against(self, against: Sequence[float] | None) -> Sequence[float]:
        return (self.recommended,) if against is None and self.recommended is not None else (against or ())

    def bluff_op(self) -> str:
        """How the bluff claim reads a threshold: ``<=`` (distance) or ``>`` (score)."""
        return ">" if self.higher_is_closer else "<="

    def lost_op(self) -> str:
        """How the lost claim reads a threshold: ``>`` (distance) or ``<=`` (score)."""
        return "<=" if self.higher_is_closer else ">"

    def bluff_bound_text(self, against: Sequence[float] | None = None) -> str:
        """``bluff_ok_up_to`` rounded on its safe side (down on a distance axis, up on a score
        axis; :func:`evalcore.measures.rounding.bound_text`), with the decimals it takes to
        read the thresholds ``against`` (default: the recommendation) right; ``-`` when none."""
        if self.bluff_ok_up_to is None:
            return "-"
        return bound_text(self.bluff_ok_up_to, self.bluff_op(), against=self._against(against))

    def lost_bound_text(self, against: Sequence[float] | None = None) -> str:
        """``lost_ok_above`` rounded on its safe side (up on a distance axis, down on a score
        axis), as :meth:`bluff_bound_text`."""
        if self.lost_ok_above is None:
            return "-"
        return bound_text(self.lost_ok_above, self.lost_op(), against=self._against(against))

    def bluff_region(self, against: Sequence[float] | None = None) -> str:
        """Where the bluff claim holds: ``t <= 0.470`` (distance) or ``t > 0.470`` (score), the
        bound rounded on its safe side (:meth:`bluff_bound_text`)."""
        if self.bluff_status == "unbounded":
            return "every t"
        if self.bluff_ok_up_to is None:
            return "no t"
        return f"t {self.bluff_op()} {self.bluff_bound_text(against)}"

    def lost_region(self, against: Sequence[float] | None = None) -> str:
        """Where the lost claim holds: ``t > 0.300`` (distance) or ``t <= 0.300`` (score), the
        bound rounded on its safe side (:meth:`lost_bound_text`)."""
        if self.lost_status == "unbounded":
            return "every t"
        if self.lost_ok_above is None:
            return "no t"
        return f"t {self.lost_op()} {self.lost_bound_text(against)}"

    def problem(self, tr: Translator | None = None) -> str | None:
        """Which claim cannot be met and what would be needed, in words; None when feasible.
        ``tr``: the dashboard's language (English without it)."""
        if self.feasible:
            return None

        tr = tr or ENGLISH
        _ = tr.gettext
        conf = rate_text(self.confidence)
        if self.bluff_status == "too_few":
            text = _(
                "{n} off-topic questions support at best 'bluffs <= {best}'; {needed} are needed for "
                "{alpha} at {confidence}. Add off-topic questions or loosen the max bluff rate."
            ).format(
                n=self.n_ood,
                best=rate_bound_text(self.best_bluff_rate),
                needed=_count(self.ood_needed),
                alpha=rate_text(self.max_bluff_rate),
                confidence=conf,
            )
        elif self.lost_status == "too_few":
            text = _(
                "{n} answerable questions support at best 'lost <= {best}'; {needed} are needed for "
                "{beta} at {confidence}. Add questions or loosen the max lost rate."
            ).format(
                n=self.n_answerable,
                best=rate_bound_text(self.best_lost_rate),
                needed=_count(self.answerable_needed),
                beta=rate_text(self.max_lost_rate),
                confidence=conf,
            )
        else:
            text = _(
                "No threshold meets both claims: bluffs <= {alpha} needs {bluff_region}, lost <= {beta} needs "
                "{lost_region}. Loosen alpha or beta, or use a retriever that separates real from off-topic "
                "questions better."
            ).format(
                alpha=rate_text(self.max_bluff_rate),
                bluff_region=_(self.bluff_region()),
                beta=rate_text(self.max_lost_rate),
                lost_region=_(self.lost_region()),
            )
        return tr.numbers_in(text)


def _count(n: int | None) -> str:
    """A number of questions needed: in digits, or about so many when astronomically large."""
    return str(n) if n is None or n < 10**12 else f"about {float(n):.3g}"


def _rate(value: float, name: str, low: float = 0.0) -> float:
    """``value`` as a rate in ``(0, 1)``, or in ``[low, 1)`` when ``low`` is given; ClaimError naming ``name``."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        x = math.nan
    if isinstance(value, bool) or not (0.0 < x < 1.0) or x < low:
        interval = f"[{low:g}, 1)" if low > 0 else "(0, 1)"
        raise ClaimError(f"{name} must be a number in {interval}; got {str(value)!r}")
    return x


def _array(values: Values, name: str, higher_is_closer: bool) -> NDArray[np.float64]:
    import numpy as np

    a = np.asarray(values, dtype=float).ravel()
    wrong = math.inf if higher_is_closer else -math.inf
    if np.isnan(a).any() or (a == wrong).any():
        raise ClaimError(f"{name}: a gate value must be a finite number (or {-wrong}: no hit)")
    return a


def allowed_count(n: int, rate: float, delta: float) -> int | None:
    """``max{k >= 0 : BinomCDF(k; n, rate) <= delta}``, or None when there is no such k."""
    import numpy as np
    from scipy.stats import binom

    if n <= 0:
        return None
    cdf = binom.cdf(np.arange(n + 1), n, rate)
    ok = np.flatnonzero(cdf <= delta)
    return int(ok[-1]) if len(ok) else None


def needed(rate: float, delta: float) -> int:
    """``ceil(ln delta / ln(1 - rate))``: the set size that supports ``rate`` with none failing.
    ClaimError when that is no finite number (a rate so small that the quotient overflows)."""
    size = math.log(delta) / math.log1p(-rate)  # log1p: no 0 for a tiny rate
    if not math.isfinite(size):
        raise ClaimError(f"a rate of {rate!r} cannot be supported by any set (at least {MIN_RATE:g})")
    return math.ceil(size)


def best_rate(n: int, delta: float) -> float:
    """The smallest rate a set of ``n`` supports at confidence ``1 - delta`` (none failing):
    ``1 - delta ** (1 / n)`` (the one-sided Clopper-Pearson upper bound of 0 / n)."""
    return 1.0 - delta ** (1.0 / n) if n > 0 else 1.0


def _bound(
    values: NDArray[np.float64], rate: float, delta: float, smallest: bool
) -> tuple[str, float | None, int | None]:
    """(status, boundary, allowed): the ``(k*+1)``-th smallest (or largest) value."""
    import numpy as np

    k = allowed_count(len(values), rate, delta)
    if k is None:
        return "too_few", None, None
    if k + 1 > len(values):
        return "unbounded", None, k
    ordered = np.sort(values)
    return "bounded", float(ordered[k] if smallest else ordered[len(values) - 1 - k]), k


def _recommended(bluff: float | None, lost: float | None, finite: NDArray[np.float64], higher: bool) -> float:
    """The threshold a feasible claim recommends: the loosest gate both claims allow, on the
    slider's grid (0.001) where a grid value lies in the band, else the exact value (see the
    module docstring). ``bluff`` / ``lost``: the bounds (None: unbounded); ``finite``: the
    sorted distinct finite gate values."""
    if higher:  # the bluff claim holds for t > bluff, the lost claim for t <= lost
        edge = bluff if bluff is not None else -math.inf
        above = finite[finite > edge]
        if len(above):
            exact = float(above[0])
        else:  # nothing observed above: keep nothing
            exact = math.nextafter(edge, math.inf) if math.isfinite(edge) else 0.0
        grid: float | None = None
        if bluff is not None:
            grid = grid_above(bluff)
        elif len(finite):
            grid = grid_at_or_below(float(finite[0]))
        ok = grid is not None and (lost is None or grid <= lost)
    else:  # the bluff claim holds for t <= bluff, the lost claim for t > lost
        if bluff is not None:
            exact = bluff
        else:  # every threshold meets the bluff claim: keep every hit
            exact = math.nextafter(float(finite[-1]), math.inf) if len(finite) else math.inf
        grid = None
        if bluff is not None:
            grid = grid_at_or_below(bluff)
        elif len(finite):
            grid = grid_above(float(finite[-1]))
        ok = grid is not None and (lost is None or grid > lost)
    return grid if ok and grid is not None else exact


def auc_interval(ood: NDArray[np.float64], inside: NDArray[np.float64]) -> tuple[float, float, float]:
    """``(auc, low, high)``: ``P(ood > inside) + P(=)/2`` with its 95% DeLong interval (NaN
    bounds when either set has fewer than 2 values)."""
    import numpy as np
    from scipy.stats import norm, rankdata

    m, n = len(ood), len(inside)
    if m == 0 or n == 0:
        return math.nan, math.nan, math.nan
    both = np.concatenate([ood, inside])
    ranks = rankdata(both)  # midranks handle ties and infinities
    ood_in_all = ranks[:m]
    auc = float((ood_in_all.sum() - m * (m + 1) / 2) / (m * n))
    if m < 2 or n < 2:
        return auc, math.nan, math.nan
    # DeLong: V10 (per off-topic query) = share of in-domain it exceeds, V01 per in-domain query
    v10 = (ood_in_all - rankdata(ood)) / n
    v01 = 1.0 - (ranks[m:] - rankdata(inside)) / m
    var = float(np.var(v10, ddof=1) / m + np.var(v01, ddof=1) / n)
    half = float(norm.ppf(0.975)) * math.sqrt(max(var, 0.0))
    return auc, max(0.0, auc - half), min(1.0, auc + half)


def threshold_claim(
    ood_min: Values,
    answerable_min: Values,
    in_domain_min: Values,
    *,
    axis: str,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Claim:
    """The claim of one configuration from its gate values (see the module docstring).

    ``axis``: ``"distance"`` (keep ``value < t``) or ``"score"`` (higher = closer, keep
    ``value >= t``). ClaimError for alpha or beta outside [MIN_RATE, 1), a confidence outside (0, 1), an unknown
    axis, no off-topic query or no answerable query.
    """
    import numpy as np

    if axis not in AXES:
        raise ClaimError(f"axis must be 'distance' or 'score', got {axis!r}")
    alpha = _rate(alpha, "max bluff rate (alpha)", MIN_RATE)
    beta = _rate(beta, "max lost rate (beta)", MIN_RATE)
    confidence = _rate(confidence, "confidence")
    higher = axis == "score"
    ood = _array(ood_min, "off-topic gate values", higher)
    correct = _array(answerable_min, "answerable gate values", higher)
    inside = _array(in_domain_min, "in-domain gate values", higher)
    if len(ood) == 0:
        raise EmptyClaimSet("no off-topic (out-of-domain) query: bluffs cannot be bounded")
    if len(correct) == 0 or not np.isfinite(correct).all():
        raise EmptyClaimSet(
            "no answerable in-domain query (a correct hit in the top 4): lost answers cannot be bounded"
        )
    delta = 1.0 - confidence

    # on a score axis, bluffs come from the largest scores and losses from the smallest
    bluff_status, bluff_edge, k = _bound(ood, alpha, delta, smallest=not higher)
    lost_status, lost_edge, j = _bound(correct, beta, delta, smallest=higher)
    finite = np.concatenate([ood, correct, inside])
    finite = np.unique(finite[np.isfinite(finite)])

    feasible = "too_few" not in (bluff_status, lost_status)
    if feasible and bluff_edge is not None and lost_edge is not None:
        feasible = bluff_edge < lost_edge if higher else lost_edge < bluff_edge
    recommended: float | None = None
    if feasible:
        recommended = _recommended(bluff_edge, lost_edge, finite, higher)

    counts: dict[str, int | None] = dict.fromkeys(("bluffs", "lost", "refused", "answered_correct", "answered_wrong"))
    if recommended is not None:
        t = recommended

        def kept(values: NDArray[np.float64]) -> int:
            return int((values >= t).sum() if higher else (values < t).sum())

        answered, right = kept(inside), kept(correct)
        counts = {
            "bluffs": kept(ood),
            "lost": len(correct) - right,
            "refused": len(inside) - answered,
            "answered_correct": right,
            "answered_wrong": answered - right,
        }

    mirrored = (-ood, -inside) if higher else (ood, inside)
    auc, auc_low, auc_high = auc_interval(*mirrored)
    return Claim(
        configuration=None,
        axis=axis,
        n_ood=len(ood),
        n_in_domain=len(inside),
        n_answerable=len(correct),
        confidence=confidence,
        max_bluff_rate=alpha,
        bluff_status=bluff_status,
        bluff_ok_up_to=bluff_edge,
        ood_needed=needed(alpha, delta) if bluff_status == "too_few" else None,
        bluffs_allowed=k,
        best_bluff_rate=best_rate(len(ood), delta),
        max_lost_rate=beta,
        lost_status=lost_status,
        lost_ok_above=lost_edge,
        answerable_needed=needed(beta, delta) if lost_status == "too_few" else None,
        lost_allowed=j,
        best_lost_rate=best_rate(len(correct), delta),
        feasible=feasible,
        recommended=recommended,
        auc=auc,
        auc_low=auc_low,
        auc_high=auc_high,
        auc_method=AUC_METHOD,
        method=METHOD,
        **counts,
    )
