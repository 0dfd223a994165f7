"""Intervals and paired tests (METHODS.md "Correct hits"), and what a sample of a given size can show.

Every proportion gets a 95% Wilson interval (statsmodels' formula, computed here: importing
statsmodels costs a command about a second); two configurations that answered
the same queries are compared *paired* with a two-sided exact sign test on the discordant
queries (scipy's ``binomtest``); a matrix of many pairs offers a Holm correction.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from statistics import NormalDist
from typing import TYPE_CHECKING, SupportsInt, cast

from evalcore.i18n import ENGLISH

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd

    from evalcore.i18n import Translator

log = logging.getLogger(__name__)

#: How every proportion's interval is computed (named in captions and exports).
INTERVAL_METHOD = "95% Wilson interval (statsmodels proportion_confint, method='wilson')"  # its formula
#: The paired test's name (the terminal's compare legend adds which p it shows).
SIGN_TEST = "two-sided exact sign test"
#: How two configurations on the same queries are compared (named in captions and exports).
PAIRED_TEST = f"{SIGN_TEST} (scipy binomtest) on discordant queries"
#: The same test as the regression gate's reports name it (text, Markdown, JSON).
GATE_TEST = f"{SIGN_TEST} (scipy binomtest) on the discordant queries"
#: The significance level: what the dashboard, the terminal and traffic drift mark (p < ALPHA),
#: and the regression gate's default ``--alpha``.
ALPHA = 0.05

#: Columns of :func:`win_loss_matrix`, in order.
MATRIX_COLUMNS = ("row", "column", "wins", "losses", "ties", "n", "p_value", "p_holm")


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval ``[low, high]``; unpacks as a tuple: ``low, high = interval``."""

    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass(frozen=True, slots=True)
class SignTest:
    """A paired comparison of ``first`` against ``second`` on one per-query boolean.

    ``wins``: queries only the first gets; ``losses``: only the second gets; ``ties``: both or
    neither (not counted by the test). ``won`` / ``lost`` name the query ids of the wins and
    losses, sorted.
    """

    wins: int
    losses: int
    ties: int
    p_value: float
    won: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return self.wins + self.losses + self.ties


def _count(value: object, name: str) -> int:
    """A non-negative integer count (bools and integral numpy values accepted)."""
    try:
        # int() decides what it can convert; anything else raises TypeError or ValueError
        as_int = int(cast(SupportsInt, value))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}") from None
    if as_int != value or as_int < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return as_int


def _confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def _critical(confidence: float) -> float:
    """The two-sided standard normal quantile of ``confidence`` (1.959964 for 0.95), from the
    standard library: scipy's ``norm.isf`` gives the same to within 2 units in the last place."""
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``successes`` of ``n``.

    The formula of ``statsmodels.stats.proportion.proportion_confint(method="wilson")``, in its
    order of operations (the tests compare the two):
    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p = successes/n`` and
    ``z`` the two-sided normal quantile of ``confidence``.
    38 of 64 gives [0.471, 0.705]; 53 of 64 gives [0.718, 0.901].

    Raises ValueError when ``n == 0`` (no interval exists for an empty sample; callers show
    "n/a"), when ``successes`` lies outside ``[0, n]``, or ``confidence`` outside (0, 1).
    """
    successes = _count(successes, "successes")
    n = _count(n, "n")
    if n == 0:
        raise ValueError("n must be positive: no Wilson interval for an empty sample (n=0)")
    if successes > n:
        raise ValueError(f"successes must lie in [0, n={n}], got {successes}")
    crit = _critical(_confidence(confidence))
    crit2 = crit**2
    q = successes / n
    denom = 1 + crit2 / n
    center = (q + crit2 / (2 * n)) / denom
    dist = crit * math.sqrt(q * (1.0 - q) / n + crit2 / (4.0 * n**2)) / denom
    return Interval(min(1.0, max(0.0, center - dist)), min(1.0, max(0.0, center + dist)))


def wilson_intervals(successes: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """:func:`wilson_interval` for arrays of counts at once (every ``n`` positive), clipped to
    [0, 1]: the ``(low, high)`` arrays of the same computation."""
    import numpy as np

    crit = _critical(_confidence(confidence))
    crit2 = crit**2
    nobs = np.asarray(n, dtype=np.float64)
    q = np.asarray(successes, dtype=np.float64) / nobs
    denom = 1 + crit2 / nobs
    center = (q + crit2 / (2 * nobs)) / denom
    dist = crit * np.sqrt(q * (1.0 - q) / nobs + crit2 / (4.0 * nobs**2))
    dist /= denom
    return np.clip(center - dist, 0.0, 1.0), np.clip(center + dist, 0.0, 1.0)


def format_p(p: float) -> str:
    """A p-value as every screen and file shows it: three significant digits (``"0.0318"``,
    ``"0.742"``, ``"1"``), ``"<0.001"`` below 0.001, ``"n/a"`` for NaN. More digits where
    rounding would put the text on the other side of :data:`ALPHA` (0.04996 -> ``"0.04996"``)."""
    p = float(p)
    if math.isnan(p):
        return "n/a"
    if p < 0.001:
        return "<0.001"
    for digits in range(3, 8):
        text = f"{p:.{digits}g}"
        if (float(text) < ALPHA) == (p < ALPHA):
            return text
    return repr(p)


def format_p_plain(p: float) -> str:
    """A p-value with 3 significant digits as the terminal and the gate's reports print it:
    ``0.0015``, ``3.05e-05``, ``1`` (no ``<0.001``; cf. :func:`format_p` for screens and files)."""
    return f"{p:.3g}"


def p_relation(text: str) -> str:
    """``"= 0.0318"`` or ``"< 0.001"``: a :func:`format_p` text after a p-value's name."""
    return f"< {text[1:]}" if text.startswith("<") else f"= {text}"


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: ``binomtest(wins, wins + losses, 0.5).pvalue``.

    Ties are not counted by the caller; no discordant pair (``wins + losses == 0``) gives 1.0.
    +18/-3 gives 0.0015; +12/-2 gives 0.0129; +8/-6 gives 0.79.
    """
    from scipy.stats import binomtest

    wins = _count(wins, "wins")
    losses = _count(losses, "losses")
    if wins + losses == 0:
        return 1.0
    return min(1.0, float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue))


def _describe_difference(first: Mapping[str, object], second: Mapping[str, object]) -> str:
    only_first = sorted(set(first) - set(second), key=str)
    only_second = sorted(set(second) - set(first), key=str)
    parts = []
    for label, ids in (("only in first", only_first), ("only in second", only_second)):
        if ids:
            shown = ", ".join(repr(i) for i in ids[:5]) + (", ..." if len(ids) > 5 else "")
            parts.append(f"{len(ids)} {label} ({shown})")
    return "; ".join(parts)


def paired_test(first: Mapping[str, bool], second: Mapping[str, bool], common: bool = False) -> SignTest:
    """Paired sign test of two configurations on a per-query boolean (e.g. hit@k).

    ``first`` and ``second`` map query id -> outcome and must cover the same query ids
    (ValueError naming a few differing ids and how many otherwise). Wins are queries where
    only ``first`` is true, losses where only ``second`` is; p = :func:`sign_test`.
    With ``common``, the pair is compared on the queries both sides answered (for
    configurations that could not answer some queries, e.g. failed endpoint calls: the
    caller has checked that the runs asked the same queries).
    """
    if common:
        both = set(first) & set(second)
        first = {q: v for q, v in first.items() if q in both}
        second = {q: v for q, v in second.items() if q in both}
    if set(first) != set(second):
        raise ValueError("paired test needs the same queries on both sides: " + _describe_difference(first, second))
    won = tuple(sorted((q for q in first if bool(first[q]) and not bool(second[q])), key=str))
    lost = tuple(sorted((q for q in first if bool(second[q]) and not bool(first[q])), key=str))
    ties = len(first) - len(won) - len(lost)
    return SignTest(len(won), len(lost), ties, sign_test(len(won), len(lost)), won, lost)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    Sort ascending ``p_(1) <= ... <= p_(m)``; ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
    The same figures as ``statsmodels.stats.multitest.multipletests(p, method="holm")`` (tested
    against it), computed directly: ``multipletests`` runs the garbage collector on every call,
    which costs a tenth of a second per period of a traffic drift check on a big store. Empty
    input gives ``[]``; a p-value outside [0, 1] (or NaN) raises ValueError.
    """
    values = [float(p) for p in p_values]
    for p in values:
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-values must lie in [0, 1], got {p!r}")
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * values[i]))
        out[i] = running
    return out


def win_loss_matrix(
    outcomes: Mapping[str, Mapping[str, bool]], adjust: bool = True, common: bool = False
) -> pd.DataFrame:
    """Every ordered pair of configurations, paired on the same per-query boolean.

    ``outcomes`` maps a configuration label (any string: ``"E/dense"``,
    ``"run1:E/dense"``) to {query id: outcome}; all must cover the same queries, or with
    ``common`` each pair is paired on the queries both answered (``n`` then varies by pair).

    Returns a tidy DataFrame, one row per ordered pair (row != column; the diagonal is
    left out), in the order of ``outcomes``, with columns :data:`MATRIX_COLUMNS`:
    ``row``, ``column`` (labels), ``wins`` (queries only ``row`` gets), ``losses`` (only
    ``column`` gets), ``ties``, ``n`` (queries), ``p_value`` (:func:`sign_test`, the same for
    both orders of a pair) and ``p_holm``: Holm-adjusted over the ``k(k-1)/2`` unordered
    pairs (each pair's adjusted p appears for both orders), or NaN when ``adjust`` is False.
    Fewer than two configurations give an empty frame with these columns.
    """
    import pandas as pd

    labels = list(outcomes)
    if len(labels) >= 2 and not common:
        base = labels[0]
        for label in labels[1:]:
            if set(outcomes[label]) != set(outcomes[base]):
                raise ValueError(
                    f"configurations {base!r} and {label!r} did not answer the same queries: "
                    + _describe_difference(outcomes[base], outcomes[label])
                )
    pairs = list(combinations(range(len(labels)), 2))
    tests = {(i, j): paired_test(outcomes[labels[i]], outcomes[labels[j]], common) for i, j in pairs}
    adjusted = holm([tests[p].p_value for p in pairs]) if adjust else [math.nan] * len(pairs)
    p_holm = dict(zip(pairs, adjusted, strict=True))
    rows = []
    for i, row in enumerate(labels):
        for j, column in enumerate(labels):
            if i == j:
                continue
            test = tests[(min(i, j), max(i, j))]
            wins, losses = (test.wins, test.losses) if i < j else (test.losses, test.wins)
            rows.append((row, column, wins, losses, test.ties, test.n, test.p_value, p_holm[(min(i, j), max(i, j))]))
    frame = pd.DataFrame(rows, columns=list(MATRIX_COLUMNS))
    return frame.astype(
        {"wins": "int64", "losses": "int64", "ties": "int64", "n": "int64", "p_value": "float64", "p_holm": "float64"}
    )


# --- What the sample can show -------------------------------------------------------------


def _z(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + _confidence(confidence) / 2))


def interval_half_width(n: int, p: float = 0.5, confidence: float = 0.95) -> float:
    """Half the width of the Wilson interval for an observed proportion ``p`` of ``n`` queries.

    ``z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)`` — the Wilson formula with ``p`` allowed to be
    any value in [0, 1] (it need not be a whole count of ``n``). 64 queries at 0.5 give 0.119
    ("about ±0.12"). ValueError for ``n < 1`` or ``p`` outside [0, 1].
    """
    n = _count(n, "n")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    z = _z(confidence)
    return z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))


@lru_cache(maxsize=256)
def _rejection_counts(discordant: int, alpha: float) -> tuple[int, ...]:
    """Win counts w in 0..D for which the exact two-sided sign test rejects at ``alpha``.

    At p = 0.5 the binomial is symmetric, so the two-sided exact p-value of w wins is
    ``min(1, 2 * P(X <= min(w, D - w)))`` — what :func:`sign_test` (scipy's binomtest)
    returns — computed here for every w at once.
    """
    import numpy as np
    from scipy.stats import binom

    w = np.arange(discordant + 1)
    p = np.minimum(1.0, 2.0 * binom.cdf(np.minimum(w, discordant - w), discordant, 0.5))
    return tuple(int(x) for x in w[p <= alpha])


def sign_test_power(discordant: int, win_share: float, alpha: float = ALPHA) -> float:
    """Exact power of the two-sided sign test on ``discordant`` pairs at level ``alpha``.

    ``sum_{w in R} Binom(w; D, win_share)`` where R is the set of win counts the test rejects
    (p <= alpha). Zero discordant pairs give power 0.
    """
    import numpy as np
    from scipy.stats import binom

    discordant = _count(discordant, "discordant")
    if not 0.0 <= win_share <= 1.0:
        raise ValueError(f"win_share must lie in [0, 1], got {win_share!r}")
    region = list(_rejection_counts(discordant, float(alpha)))
    return float(np.sum(binom.pmf(region, discordant, win_share))) if region else 0.0


def detectable_difference(n: int, discordance: float = 0.25, alpha: float = ALPHA, power: float = 0.8) -> float:
    """Smallest recall difference the paired sign test detects with the given power.

    Assumption: ``D = round(n * discordance)`` of the ``n`` queries are discordant (one
    configuration finds the answer, the other does not), the rest are ties. Among the
    discordant pairs the better configuration wins each one independently with probability
    ``q > 0.5``; the recall difference is then ``discordance * (2q - 1)``. We find the smallest
    ``q`` whose *exact* power (:func:`sign_test_power`, scipy's binomial, no normal rule of
    thumb) reaches ``power`` and return the corresponding difference. When even ``q = 1``
    (every discordant pair a win) falls short — too few discordant pairs — the result is
    ``math.inf``: no difference is detectable under this assumption.
    """
    from scipy.optimize import brentq

    n = _count(n, "n")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must lie in (0, 1], got {discordance!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie in (0, 1), got {power!r}")
    discordant = round(n * discordance)
    if sign_test_power(discordant, 1.0, alpha) < power:
        return math.inf
    # Power rises with q on [0.5, 1] (the rejection region is two symmetric tails).
    q = brentq(lambda s: sign_test_power(discordant, s, alpha) - power, 0.5, 1.0, xtol=1e-12)
    return (discordant / n) * (2 * q - 1)


def sample_statement(
    n: int,
    p: float = 0.5,
    confidence: float = 0.95,
    discordance: float = 0.25,
    alpha: float = ALPHA,
    power: float = 0.8,
    tr: Translator | None = None,
) -> str:
    """One sentence on what ``n`` queries can show (for the dashboard's caption; ``tr``: its language).

    E.g. "With 64 queries, a recall near 0.5 carries a 95% Wilson interval of about ±0.12;
    a paired sign test at alpha 0.05 with 80% power detects a recall difference of about
    0.19, assuming 25% of the queries (16) are discordant."
    """
    half = interval_half_width(n, p, confidence)
    diff = detectable_difference(n, discordance, alpha, power)
    discordant = round(n * discordance)

    _ = (tr or ENGLISH).gettext
    first = _("With {n} queries, a recall near {p} carries a {confidence} Wilson interval of about ±{half}").format(
        n=n, p=f"{p:g}", confidence=f"{confidence:.0%}", half=f"{half:.2f}"
    )
    if math.isinf(diff):
        second = _(
            "assuming {share} of the queries ({discordant}) are discordant, a paired sign test at alpha {alpha} "
            "cannot reach {power} power for any difference"
        ).format(share=f"{discordance:.0%}", discordant=discordant, alpha=f"{alpha:g}", power=f"{power:.0%}")
    else:
        second = _(
            "a paired sign test at alpha {alpha} with {power} power detects a recall difference of about {diff}, "
            "assuming {share} of the queries ({discordant}) are discordant"
        ).format(
            alpha=f"{alpha:g}",
            power=f"{power:.0%}",
            diff=f"{diff:.2f}",
            share=f"{discordance:.0%}",
            discordant=discordant,
        )
    return (tr or ENGLISH).numbers_in(f"{first}; {second}.")
