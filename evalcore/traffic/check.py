"""``evalcore traffic check``: does the decided threshold still hold on real traffic?

For one configuration, the stored traffic is cut into half-open periods ``[start, start + P)``
from 00:00 UTC of the earliest stored query's day (every log line counts, duplicates included).
The **last** period fails the check when

- its refused share at threshold T is above ``max_refused_share`` (when given), or
- its drift is significant: the two-sample KS test of its gate values against the evaluation's
  in-domain + off-topic gate values of that configuration and, when there is a previous
  period with queries, against that period; Holm-adjusted over the tests run, failing when an
  adjusted p is below ``alpha`` (0.05).

T is ``--threshold``, else the configuration's latest saved decision; neither: ConfigError
(exit 2). Exit codes: 1 when the check fails, 0 when it passes, 2 on bad input.

**A deployment's check** (:func:`run_deployment_check`, ``traffic check --deployment NAME``)
judges production as it runs: the deployment's current version (its decision's threshold and
configuration, :mod:`evalcore.read.traffic.versions`), and only the lines that deployment
posted and that were asked while that version was deployed (from its ``deployed_at`` on). Its
periods start at 00:00 UTC of the version's first day and run on to the one holding ``now``.
A period is **complete** once its end has passed (``end <= now``); only the last complete
period is judged (each period once, when it ends, for a scheduled job), and the periods after
it, which have not ended, are skipped as partial unless ``include_partial``.

A deployment's check **fails** only when a promise breaks: when the monitor of the version's
production rates (:mod:`evalcore.read.traffic.estimates`, on the labelled review sample) reports
the bluff or the lost claim ``breached``, or when a judged period's refused share lies outside the
operator's range (``min_refused_share``, ``max_refused_share``). Drift (the KS tests above, Holm-
adjusted within each judged period: the Traffic screen's "moved" flag) is reported as a
description, since a harmless change in the mix of in-domain and off-topic questions moves it
too; it fails the check only with ``fail_on_drift``. The report carries the version's rates with
their bounds, per review period and for the whole version, and the monitor's state per claim.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import check_name, for_terminal
from evalcore.errors import ConfigError, UnknownDeployment
from evalcore.measures.drift import parse_period
from evalcore.measures.rounding import rate_bound_text, rate_lower_text, rate_text, threshold_text
from evalcore.measures.stats import ALPHA, format_p_plain, holm
from evalcore.read.decisions import latest_decision
from evalcore.read.traffic.estimates import VersionEstimate, version_estimate
from evalcore.read.traffic.periods import periods as period_rows
from evalcore.read.traffic.versions import (
    DeployedVersion,
    deployed_version,
    iso,
    pending_lines,
    version_lines,
)
from evalcore.store.deployments import sorted_names
from evalcore.traffic.sampling import ensure_drawn
from evalcore.traffic.target import resolve_target

if TYPE_CHECKING:
    from evalcore.measures.production import Bounds
    from evalcore.store import Store


@dataclass
class CheckReport:
    configuration: str
    threshold: float
    periods: list[dict[str, Any]] = field(default_factory=list)
    failed: bool = False
    reasons: list[str] = field(default_factory=list)
    threshold_source: str = ""
    adjusted: list[float | None] = field(default_factory=list)  # each period's Holm-adjusted KS p (text only)

    def as_json(self) -> dict[str, Any]:
        """Exactly the keys the scheduled job reads (docs/TRAFFIC.md)."""
        return {
            "configuration": self.configuration,
            "threshold": self.threshold,
            "periods": self.periods,
            "failed": self.failed,
            "reasons": self.reasons,
        }

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def text(self) -> str:
        t = threshold_text(self.threshold, 4)
        out = [f"traffic check of {self.configuration} at t = {t} ({self.threshold_source})"]
        for p, padj in zip(self.periods, self.adjusted or [None] * len(self.periods), strict=True):
            out.append(_period_line(p, padj))
        out.append("FAILED: " + "; ".join(self.reasons) if self.failed else "passed: the last period holds")
        return "\n".join(out)


def _period_line(p: dict[str, Any], padj: float | None) -> str:
    """One period of the text report: its span, queries, refused share and KS test."""
    ks = (
        "n/a"
        if p["ks_pvalue"] is None
        else f"D = {p['ks_statistic']:.3f}, p = {format_p_plain(p['ks_pvalue'])}"
        + (f", Holm-adjusted p = {format_p_plain(padj)}" if padj is not None else "")
    )
    share = "n/a" if p["refused_share"] is None else f"{p['refused_share']:.1%}"
    return f"  {p['start']} .. {p['end']}: {p['queries']} queries, {p['refused']} refused ({share}); KS {ks}"


def _number(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _period(row: Mapping[Hashable, Any]) -> dict[str, Any]:
    """A period of the JSON report, from a row of :func:`evalcore.read.traffic.periods.periods`."""
    return {
        "start": iso(row["start"]),
        "end": iso(row["end"]),
        "queries": int(row["queries"]),
        "refused": int(row["refused"]),
        "refused_share": _number(row["refused_share"]),
        "ks_statistic": _number(row["ks_statistic"]),
        "ks_pvalue": _number(row["ks_pvalue"]),
    }


def run_check(
    store: Store,
    reference: str,
    period: str = "7d",
    threshold: float | None = None,
    max_refused_share: float | None = None,
    alpha: float = ALPHA,
) -> CheckReport:
    """The check of the module docstring."""
    step = parse_period(period)
    if max_refused_share is not None and not 0.0 <= max_refused_share <= 1.0:
        raise ConfigError(f"--max-refused-share must lie in [0, 1], got {max_refused_share!r}")
    target = resolve_target(store, reference)
    config = target.configuration
    if threshold is None:
        decision = latest_decision(store, target.run_id, config)
        if decision is None:
            raise ConfigError(
                f"run {target.run_id} configuration {config.label} has no saved decision; give --threshold T"
            )
        threshold, source = decision.threshold, f"saved decision {decision.decision_id}"
    else:
        if not math.isfinite(threshold):
            raise ConfigError(f"--threshold must be a number, got {threshold!r}")
        source = "--threshold"
    frame = period_rows(store, target.run_id, config, step, float(threshold))
    if frame.empty:
        raise ConfigError(f"run {target.run_id} configuration {config.label} has no stored traffic; import a log first")
    report = CheckReport(config.label, float(threshold), threshold_source=source)
    for row in frame.to_dict("records"):
        report.periods.append(_period(row))
        report.adjusted.append(_number(row["ks_padj"]))
    last = frame.iloc[-1]
    share = float(last["refused_share"])
    if max_refused_share is not None and share > max_refused_share:
        report.reasons.append(
            f"the last period refused {share:.1%} of its {int(last['queries'])} queries, above {max_refused_share:.1%}"
        )
    # the tests of the last period: against the evaluation, and against the previous period
    tests: list[tuple[str, float, float]] = []
    if not math.isnan(float(last["ks_pvalue"])):
        tests.append(("the evaluation's queries", float(last["ks_statistic"]), float(last["ks_pvalue"])))
    if not math.isnan(float(last["prev_pvalue"])):
        tests.append(("the previous period", float(last["prev_statistic"]), float(last["prev_pvalue"])))
    adjusted = holm([p for _, _, p in tests]) if tests else []
    for (what, d, p), padj in zip(tests, adjusted, strict=True):
        if padj < alpha:
            report.reasons.append(
                f"the last period's gate values drifted from {what} (KS D = {d:.3f}, p = {format_p_plain(p)}, "
                f"Holm-adjusted over {len(tests)} test{'s' if len(tests) > 1 else ''}: "
                f"{format_p_plain(padj)} < {alpha:g})"
            )
    report.failed = bool(report.reasons)
    return report


# --- a deployment's check ------------------------------------------------------------------------


@dataclass
class DeploymentReport(CheckReport):
    """:class:`CheckReport` of a deployment's current version (:func:`run_deployment_check`):
    which version, as of when, which periods were judged and which were skipped as partial."""

    version: DeployedVersion | None = None
    as_of: datetime | None = None
    period: str = ""
    include_partial: bool = False
    judged: list[int] = field(default_factory=list)  #: indices into ``periods``
    partial: list[int] = field(default_factory=list)  #: indices into ``periods`` (not ended at ``as_of``)
    notes: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)  #: drift sentences that did not fail it (no ``--fail-on-drift``)
    estimate: VersionEstimate | None = None

    def _spans(self, which: list[int]) -> list[dict[str, str]]:
        return [{"start": self.periods[i]["start"], "end": self.periods[i]["end"]} for i in which]

    def as_json(self) -> dict[str, Any]:
        """The keys of docs/TRAFFIC.md "A deployment's check"."""
        assert self.version is not None and self.as_of is not None
        estimate = self.estimate.to_json() if self.estimate is not None else None
        review = {p["start"]: p for p in (estimate or {}).get("periods", [])}
        whole = {k: estimate[k] for k in _FIGURES} if estimate is not None else {}
        return {
            **self.version.to_json(),
            "as_of": iso(self.as_of),
            "period": self.period,
            "include_partial": self.include_partial,
            "periods": [
                {
                    **p,
                    "complete": i not in self.partial,
                    "judged": i in self.judged,
                    **{k: v for k, v in review.get(p["start"], {}).items() if k in _FIGURES},
                }
                for i, p in enumerate(self.periods)
            ],
            "judged": self._spans(self.judged),
            "partial": self._spans(self.partial),
            **whole,
            "monitor": None if estimate is None else estimate["monitor"],
            "estimate": estimate,
            "failed": self.failed,
            "reasons": self.reasons,
            "drift": self.drift,
            "notes": self.notes,
        }

    def text(self) -> str:
        v = self.version
        assert v is not None
        out = [
            for_terminal(
                f"traffic check of deployment {v.name} version {v.version} (decision {v.decision_id}: "
                f"run {v.run_id} {v.configuration.label} at t = {threshold_text(v.threshold, 4)}), lines asked since "
                f"{v.deployed_at:%Y-%m-%d %H:%M:%S} UTC"
            )
        ]
        for i, (p, padj) in enumerate(zip(self.periods, self.adjusted, strict=True)):
            mark = " [judged]" if i in self.judged else " [partial: not judged]" if i in self.partial else ""
            out.append(_period_line(p, padj) + mark)
        out += self._estimate_lines()
        out += [f"drift (does not fail the check; --fail-on-drift): {for_terminal(d)}" for d in self.drift]
        out += [f"note: {for_terminal(n)}" for n in self.notes]
        if self.failed:
            out.append("FAILED: " + "; ".join(self.reasons))
        elif self.judged:
            out.append(f"passed: {'the judged periods hold' if len(self.judged) > 1 else 'the judged period holds'}")
        else:
            out.append("passed: no period was judged")
        return "\n".join(out)

    def _estimate_lines(self) -> list[str]:
        """The version's production rates and the monitor's verdict on each claim."""
        e = self.estimate
        if e is None or e.whole is None:
            return ["production rates: no period of this version has a review sample yet (traffic sample)"]
        w = e.whole
        out = [
            f"production rates of version {e.version} at confidence {e.confidence:g}, from {w.labels[0]} + "
            f"{w.labels[1]} labelled lines of {w.lines[0]:,} answered + {w.lines[1]:,} refused:",
            f"  bluff rate {_bounds_text(w.bluff_rate)} (claim {rate_text(e.alpha)}); lost rate "
            f"{_bounds_text(w.lost_rate)} (claim {rate_text(e.beta)}); answers to off-topic questions "
            f"{_bounds_text(w.answered_bluff_share)}",
        ]
        for name, m in (("bluff", e.bluff), ("lost", e.lost)):
            if m is None:
                continue
            more = f" (about {m.labels_to_decide:,} more labels would decide it)" if m.labels_to_decide else ""
            out.append(f"  monitor, {name} claim: {m.state}{more}")
        return out


def _bounds_text(b: Bounds) -> str:
    """``12.0% [8.1%, 17.3%]``: the estimate to one decimal, its bounds on their safe sides."""
    if b.lower is None or b.upper is None:
        return "n/a"
    est = "n/a" if b.estimate is None else f"{b.estimate:.1%}"
    return f"{est} [{rate_lower_text(b.lower)}, {rate_bound_text(b.upper)}]"


#: the figures of a period (and of the version) that the JSON carries from the estimate
_FIGURES = ("lines", "labels", "bluff_rate", "lost_rate", "answered_bluff_share", "retrieval_misses")
#: every drift reason holds these words (so that without --fail-on-drift they describe only)
_DRIFT = "gate values drifted"


def find_version(store: Store, name: str) -> DeployedVersion:
    """Deployment ``name``'s current version; InputError for a name no deployment can have,
    :class:`~evalcore.errors.UnknownDeployment` (naming the store's deployments) for an unknown one."""
    name = check_name(name, field="--deployment", max_len=100)
    found = deployed_version(store, name)
    if found is None:
        names = sorted_names(store)
        has = (
            f"it has {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}"
            if names
            else "it has none: point one at a saved decision with PUT /api/v1/deployments/NAME"
        )
        raise UnknownDeployment(f"--deployment: no deployment {name!r} in this store ({has})")
    return found


def run_deployment_check(
    store: Store,
    name: str,
    period: str = "7d",
    max_refused_share: float | None = None,
    include_partial: bool = False,
    alpha: float = ALPHA,
    now: datetime | None = None,
    min_refused_share: float | None = None,
    fail_on_drift: bool = False,
    draw: bool = True,
) -> DeploymentReport:
    """The deployment's check of the module docstring, as of ``now`` (naive UTC; default: now).
    ``draw`` False reads only: the review samples of ended periods are not drawn (the metrics
    a scrape reads; a period without its frame counts as not labelled)."""
    step = parse_period(period)
    for option, value in (("--max-refused-share", max_refused_share), ("--min-refused-share", min_refused_share)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise ConfigError(f"{option} must lie in [0, 1], got {value!r}")
    if min_refused_share is not None and max_refused_share is not None and min_refused_share > max_refused_share:
        raise ConfigError(
            f"--min-refused-share {min_refused_share:g} is above --max-refused-share {max_refused_share:g}: "
            "the range holds no share"
        )
    v = find_version(store, name)
    target = resolve_target(store, f"{v.run_id}:{v.configuration.label}")  # the run and configuration still there
    as_of = (now or datetime.now(UTC)).replace(tzinfo=None)
    frame = period_rows(
        store, target.run_id, target.configuration, step, v.threshold, deployment=v.name, since=v.deployed_at,
        until=max(as_of, v.deployed_at),
    )  # fmt: skip
    report = DeploymentReport(
        v.configuration.label,
        v.threshold,
        threshold_source=f"deployment {v.name} version {v.version}",
        version=v,
        as_of=as_of,
        period=str(period),
        include_partial=include_partial,
    )
    rows = frame.to_dict("records")
    for row in rows:
        report.periods.append(_period(row))
        report.adjusted.append(_number(row["ks_padj"]))
    ended = [i for i, row in enumerate(rows) if row["end"] <= as_of]
    report.partial = [i for i in range(len(rows)) if i not in ended]
    report.judged = ended[-1:] + (report.partial if include_partial else [])
    _notes(store, report, v, as_of)
    judged = [rows[i] for i in report.judged]
    _judge(report, judged, max_refused_share, alpha, min_refused_share)
    if not fail_on_drift:  # drift describes; it fails the check only when asked
        report.drift, report.reasons = (
            [r for r in report.reasons if _DRIFT in r],
            [r for r in report.reasons if _DRIFT not in r],
        )
    drawn = ensure_drawn(store, v.name, now=as_of) if draw else 0  # each ended period's review sample, once
    if drawn:
        report.notes.append(
            f"drew the review sample of {drawn} ended period{'s' if drawn > 1 else ''} (label it on the Review "
            "screen or with POST /api/v1/deployments/NAME/labels)"
        )
    report.estimate = version_estimate(store, v.name, now=as_of)
    for claim in report.estimate.breached:
        m = report.estimate.bluff if claim == "bluff" else report.estimate.lost
        assert m is not None
        rate = "bluff" if claim == "bluff" else "lost"
        report.reasons.append(
            f"the {rate} claim is breached: production's {rate} rate is at least {rate_lower_text(m.lower or 0.0)} "
            f"(anytime-valid, confidence {report.estimate.confidence:g}), above the claim's {rate_text(m.target)}"
        )
    report.failed = bool(report.reasons)
    return report


def _notes(store: Store, report: DeploymentReport, v: DeployedVersion, as_of: datetime) -> None:
    """What the version's lines leave out: earlier versions' lines, lines waiting for their replay."""
    held, before = version_lines(store, v)
    if not held:
        report.notes.append(f"no line of version {v.version} is stored yet")
    if before:
        report.notes.append(
            f"{before:,} lines of deployment {v.name} asked before version {v.version} was deployed are earlier "
            "versions' and left out"
        )
    waiting = pending_lines(store, v.name)
    if waiting:
        report.notes.append(f"{waiting:,} posted lines wait for their replay and are not counted yet")
    if not report.judged:
        first = report.periods[0]["end"] if report.periods else iso(as_of)
        report.notes.append(
            f"no period of version {v.version} has ended yet (the first ends {first}): --include-partial judges "
            "the partial one"
        )


def _judge(
    report: CheckReport,
    judged: Sequence[Mapping[Hashable, Any]],
    max_refused_share: float | None,
    alpha: float,
    min_refused_share: float | None = None,
) -> None:
    """The refused share and drift rules on each judged period: a period fails on drift when it
    moved as the Traffic screen flags it (its KS tests Holm-adjusted within the period)."""
    for row in judged:
        when = f"the period from {row['start']:%Y-%m-%d %H:%M}"
        n = int(row["queries"])
        share = float(row["refused_share"])
        if max_refused_share is not None and n and share > max_refused_share:
            report.reasons.append(f"{when} refused {share:.1%} of its {n} queries, above {max_refused_share:.1%}")
        if min_refused_share is not None and n and share < min_refused_share:
            report.reasons.append(f"{when} refused {share:.1%} of its {n} queries, below {min_refused_share:.1%}")
        tests = [
            (what, float(row[d]), float(row[p]), float(row[padj]))
            for what, d, p, padj in (
                ("the evaluation's queries", "ks_statistic", "ks_pvalue", "ks_padj"),
                ("the previous period", "prev_statistic", "prev_pvalue", "prev_padj"),
            )
            if not math.isnan(float(row[p]))
        ]
        for what, d, p, padj in tests:
            if padj < alpha:
                report.reasons.append(
                    f"{when}: gate values drifted from {what} (KS D = {d:.3f}, p = {format_p_plain(p)}, "
                    f"Holm-adjusted over the period's {len(tests)} test{'s' if len(tests) > 1 else ''}: "
                    f"{format_p_plain(padj)} < {alpha:g}). A change in the mix of in-domain and off-topic "
                    "questions moves the gate values too: drift alone says nothing about the claim"
                )
    report.failed = bool(report.reasons)
