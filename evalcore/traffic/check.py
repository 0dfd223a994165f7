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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.measures.drift import parse_period
from evalcore.measures.stats import ALPHA, format_p_plain, holm
from evalcore.read.decisions import latest_decision
from evalcore.read.traffic.periods import periods as period_rows
from evalcore.traffic.target import resolve_target

if TYPE_CHECKING:
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
        out = [f"traffic check of {self.configuration} at t = {self.threshold:.4f} ({self.threshold_source})"]
        for p, padj in zip(self.periods, self.adjusted or [None] * len(self.periods), strict=True):
            ks = (
                "n/a"
                if p["ks_pvalue"] is None
                else f"D = {p['ks_statistic']:.3f}, p = {format_p_plain(p['ks_pvalue'])}"
                + (f", Holm-adjusted p = {format_p_plain(padj)}" if padj is not None else "")
            )
            share = "n/a" if p["refused_share"] is None else f"{p['refused_share']:.1%}"
            out.append(
                f"  {p['start']} .. {p['end']}: {p['queries']} queries, {p['refused']} refused ({share}); KS {ks}"
            )
        out.append("FAILED: " + "; ".join(self.reasons) if self.failed else "passed: the last period holds")
        return "\n".join(out)


def _number(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


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
        report.periods.append(
            {
                "start": row["start"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                "end": row["end"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                "queries": int(row["queries"]),
                "refused": int(row["refused"]),
                "refused_share": _number(row["refused_share"]),
                "ks_statistic": _number(row["ks_statistic"]),
                "ks_pvalue": _number(row["ks_pvalue"]),
            }
        )
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
