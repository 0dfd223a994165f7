"""The service's figures in Prometheus's text format (``GET /api/v1/metrics``).

Per deployment, labelled by ``deployment`` and ``version`` (the current one) only, never by a
query's text or a label someone gave:

- ``evalcore_traffic_lines_posted_total``, ``_replayed_total``, ``_failed_total``, and the
  gauge ``evalcore_traffic_lines_pending``: what production posted, what the job runner
  replayed, what the run's endpoint could not answer, what waits;
- ``evalcore_deployment_threshold``: the deployed t;
- ``evalcore_traffic_refused_share``: the refused share of the last period that has ended (the
  one ``traffic check --deployment`` judges; absent before a period has ended);
- ``evalcore_claim_max_rate{claim}``: the claim's bluff (alpha) and lost (beta) rates;
- ``evalcore_production_rate{claim, bound}``: production's bluff and lost rates over the
  version's labelled review sample, ``bound`` ``estimate``, ``lower`` and ``upper`` (exact, at
  the claim's confidence; absent while nothing is labelled);
- ``evalcore_monitor_state{claim, state}``: 1 for the monitor's state (``holding``,
  ``breached``, ``undecided``), 0 for the others;
- ``evalcore_review_labels{stratum}``: the labelled lines of the review sample.

Per server: ``evalcore_http_requests_total{route, method, status}`` (``route`` the template),
``evalcore_replay_queue_lines`` and ``evalcore_replay_lag_seconds`` (how long the oldest waiting
line has waited). Every figure is what :func:`~evalcore.traffic.check.run_deployment_check`
reports for the deployment, read without drawing a review sample: a scrape writes nothing.
Ratios lie in [0, 1]; times are seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from evalcore.errors import EvalcoreError
from evalcore.read.traffic.versions import PostedCounts, posted_counts
from evalcore.store.deployments import sorted_names
from evalcore.traffic.check import run_deployment_check

if TYPE_CHECKING:
    from evalcore.store import Store

STATES = ("holding", "breached", "undecided")
CLAIMS = ("bluff", "lost")


@dataclass(frozen=True, slots=True)
class DeploymentFigures:
    """One deployment's figures: its check's JSON (``traffic check --deployment --json``, read
    without drawing) and its posted lines; ``problem`` says why the check could not be read
    (a run deleted under the deployment), with ``check`` None."""

    name: str
    posted: PostedCounts
    check: Mapping[str, Any] | None
    problem: str | None = None


def deployment_figures(store: Store, now: datetime | None = None) -> list[DeploymentFigures]:
    """:class:`DeploymentFigures` of every deployment of ``store``, by name, as of ``now``."""
    out = []
    for name in sorted_names(store):
        posted = posted_counts(store, name)
        try:
            report = run_deployment_check(store, name, now=now, draw=False)
        except EvalcoreError as exc:
            out.append(DeploymentFigures(name, posted, None, str(exc)))
            continue
        out.append(DeploymentFigures(name, posted, report.as_json()))
    return out


class _Figures(Collector):
    def __init__(
        self, figures: list[DeploymentFigures], requests: Mapping[tuple[str, str, str], int], now: datetime
    ) -> None:
        self.figures, self.requests, self.now = figures, requests, now

    def collect(self) -> Iterator[Metric]:
        yield from _deployment_metrics(self.figures)
        requests = CounterMetricFamily(
            "evalcore_http_requests",
            "HTTP answers of this server since it started",
            labels=["route", "method", "status"],
        )
        for (route, method, status), n in sorted(self.requests.items()):
            requests.add_metric([route, method, status], n)
        yield requests
        waiting = [f.posted for f in self.figures]
        queued = sum(p.pending for p in waiting)
        yield GaugeMetricFamily("evalcore_replay_queue_lines", "posted lines waiting for their replay", value=queued)
        oldest = min((p.oldest_pending for p in waiting if p.oldest_pending is not None), default=None)
        lag = 0.0 if oldest is None else max(0.0, (self.now - oldest).total_seconds())
        yield GaugeMetricFamily(
            "evalcore_replay_lag_seconds", "how long the oldest line waiting for its replay has waited", value=lag
        )


def _deployment_metrics(figures: Iterable[DeploymentFigures]) -> Iterator[Metric]:
    labels = ["deployment", "version"]
    counters = {
        "posted": CounterMetricFamily("evalcore_traffic_lines_posted", "lines production posted", labels=labels),
        "replayed": CounterMetricFamily("evalcore_traffic_lines_replayed", "posted lines replayed", labels=labels),
        "failed": CounterMetricFamily(
            "evalcore_traffic_lines_failed", "replayed lines the run's endpoint could not answer", labels=labels
        ),
    }
    pending = GaugeMetricFamily(
        "evalcore_traffic_lines_pending", "posted lines waiting for their replay", labels=labels
    )
    threshold = GaugeMetricFamily("evalcore_deployment_threshold", "the deployed threshold t", labels=labels)
    refused = GaugeMetricFamily(
        "evalcore_traffic_refused_share", "refused share of the last period that has ended", labels=labels
    )
    claim = GaugeMetricFamily("evalcore_claim_max_rate", "the claim's bluff and lost rates", labels=[*labels, "claim"])
    rate = GaugeMetricFamily(
        "evalcore_production_rate",
        "production's bluff and lost rates on the labelled review sample (exact bounds at the claim's confidence)",
        labels=[*labels, "claim", "bound"],
    )
    state = GaugeMetricFamily(
        "evalcore_monitor_state",
        "1 for the anytime-valid monitor's state of each claim",
        labels=[*labels, "claim", "state"],
    )
    labelled = GaugeMetricFamily(
        "evalcore_review_labels", "labelled lines of the review sample", labels=[*labels, "stratum"]
    )
    for f in figures:
        check = f.check
        version = "" if check is None else str(check["version"])
        at = [f.name, version]
        for which, family in counters.items():
            family.add_metric(at, getattr(f.posted, which))
        pending.add_metric(at, f.posted.pending)
        if check is None:
            continue
        threshold.add_metric(at, float(check["threshold"]))
        judged = [p for p in check["periods"] if p["judged"]]
        if judged and judged[-1]["refused_share"] is not None:
            refused.add_metric(at, float(judged[-1]["refused_share"]))
        estimate = check["estimate"] or {}
        targets = estimate.get("claim", {})
        for name, key in (("bluff", "max_bluff_rate"), ("lost", "max_lost_rate")):
            if key in targets:
                claim.add_metric([*at, name], float(targets[key]))
        for name in CLAIMS:
            for bound, value in (check.get(f"{name}_rate") or {}).items():
                if value is not None:
                    rate.add_metric([*at, name, bound], float(value))
            monitor = (check.get("monitor") or {}).get(name)
            if monitor is not None:
                for s in STATES:
                    state.add_metric([*at, name, s], 1.0 if monitor["state"] == s else 0.0)
        for stratum, n in (check.get("labels") or {}).items():
            labelled.add_metric([*at, stratum], n)
    yield from (*counters.values(), pending, threshold, refused, claim, rate, state, labelled)


def exposition(
    store: Store, requests: Mapping[tuple[str, str, str], int] | None = None, now: datetime | None = None
) -> bytes:
    """The text exposition of the module docstring, as of ``now`` (naive UTC; default: now)."""
    as_of = (now or datetime.now(UTC)).replace(tzinfo=None)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Figures(deployment_figures(store, as_of), requests or {}, as_of))
    return generate_latest(registry)
