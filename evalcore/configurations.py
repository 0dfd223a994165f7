"""What each configuration of a run is, and which queries it could not answer (migration 0005).

A configuration is one strategy x retriever of a run. The ``configurations`` table says where
it came from (``source``: the built-in pipeline, an imported run, a live search endpoint or a
Python retriever function), how its hits' ``score`` reads (``score_kind``: a similarity,
higher = closer, or a distance, lower = closer), what its refusal gate thresholds
(``gate_on``: the cosine distance of built-in hits, or the retriever's own score of external
ones, METHODS.md "Runs made elsewhere"), and its embedding model and chunker. Runs stored before this table existed
(or loaded from older run files) have no rows: they read as built-in configurations.

The ``failures`` table holds the queries a configuration could not answer (an endpoint call
or a Python retriever that failed), with the reason. Such a query has no ``results`` row, so
every metric leaves it out, and paired comparisons leave it out on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.measures.threshold import Axis
from evalcore.records import Configuration
from evalcore.store.runs import configuration_rows, failure_rows

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store

SOURCES = ("builtin", "import", "endpoint", "python")
SCORE_KINDS = ("similarity", "distance")
EXTERNAL = "external"  # default chunker and retriever name of a run made elsewhere


def score_kind(value: str) -> str:
    """``similarity`` or ``distance``; ConfigError naming both otherwise."""
    kind = str(value).strip().lower()
    if kind not in SCORE_KINDS:
        raise ConfigError(
            f"score kind must be one of {', '.join(SCORE_KINDS)} "
            f"(similarity: higher = closer; distance: lower = closer), got {value!r}"
        )
    return kind


@dataclass(frozen=True, slots=True)
class ConfigInfo:
    """One configuration's origin and gate. ``detail`` is a JSON object (text) saying where
    external rankings came from (file and format, or the endpoint's URL and mapping)."""

    strategy: str
    retriever: str
    source: str = "builtin"
    score_kind: str = "similarity"
    gate_on: str = "distance"
    model: str | None = None
    chunker: str | None = None
    detail: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        score_kind(self.score_kind)
        if self.gate_on not in ("distance", "score"):
            raise ValueError(f"gate_on must be 'distance' or 'score', got {self.gate_on!r}")

    @property
    def configuration(self) -> Configuration:
        """The strategy x retriever this is the origin and gate of."""
        return Configuration(self.strategy, self.retriever)

    @property
    def label(self) -> str:
        """``"E/dense"``."""
        return f"{self.strategy}/{self.retriever}"

    @property
    def external(self) -> bool:
        """True for a configuration made elsewhere (imported, endpoint, Python function)."""
        return self.source != "builtin"

    @property
    def axis(self) -> Axis:
        """What the refusal gate reads: the cosine distance, or the own score in its direction."""
        if self.gate_on == "distance":
            return Axis("distance", False)
        return Axis("score", self.score_kind == "similarity")

    def details(self) -> dict[str, Any]:
        return json.loads(self.detail) if self.detail else {}

    def row(self, run_id: str) -> dict[str, Any]:
        """The ``configurations`` row."""
        return {
            "run_id": run_id,
            "strategy": self.strategy,
            "retriever": self.retriever,
            "source": self.source,
            "score_kind": self.score_kind,
            "gate_on": self.gate_on,
            "model": self.model,
            "chunker": self.chunker,
            "detail": self.detail,
        }


def external(strategy: str, retriever: str, source: str, kind: str, detail: dict[str, Any]) -> ConfigInfo:
    """An external configuration: gates on its own score of kind ``kind``."""
    return ConfigInfo(
        strategy,
        retriever,
        source,
        score_kind(kind),
        "score",
        None,
        strategy,
        json.dumps(detail, sort_keys=True, default=str),
    )


def model_label(model: Any, settings: Any) -> str:
    """A run's model for a caption, from its ``model`` and ``settings`` (parsed, or the JSON
    text of a ``runs`` row): ``model all-MiniLM-L6-v2``, or ``ranked elsewhere (import)``
    for a run made elsewhere (it has no model of ours), or ``""`` when neither is recorded."""
    if isinstance(model, str) and model:
        return f"model {model}"
    if isinstance(settings, str):
        settings = json.loads(settings) if settings else {}
    if not isinstance(settings, dict):  # NULL (NaN or None in a frame): a run without settings
        settings = {}
    source = settings.get("source")
    # "" for a run that stopped before recording its model (a failed built-in run)
    return f"ranked elsewhere ({source})" if source and source != "builtin" else ""


def builtin_rows(
    run_id: str, strategies: Sequence[tuple[str, str, str]], retrievers: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of a built-in run: ``strategies`` as (stored name, chunker, model) x ``retrievers``."""
    return [
        ConfigInfo(name, retriever, model=model, chunker=chunker).row(run_id)
        for name, chunker, model in strategies
        for retriever in retrievers
    ]


def read(store: Store, run_id: str) -> dict[Configuration, ConfigInfo]:
    """Every configuration with results in ``run_id`` (or failures), with its
    :class:`ConfigInfo`; those without a row (older runs) read as built-in under the run's model."""
    df = configuration_rows(store, run_id)

    def value(r: Mapping[Hashable, Any], key: str, default: Any = None) -> Any:
        v = r[key]
        return default if v is None or v != v else v

    out = {}
    for r in df.to_dict("records"):
        out[Configuration(r["strategy"], r["retriever"])] = ConfigInfo(
            r["strategy"],
            r["retriever"],
            value(r, "source", "builtin"),
            value(r, "score_kind", "similarity"),
            value(r, "gate_on", "distance"),
            value(r, "model"),
            value(r, "chunker"),
            value(r, "detail"),
        )
    return out


def info(store: Store, run_id: str, strategy: str, retriever: str) -> ConfigInfo:
    """One configuration's :class:`ConfigInfo` (built-in when the run has no row for it)."""
    return read(store, run_id).get(Configuration(strategy, retriever)) or ConfigInfo(strategy, retriever)


def failures(store: Store, run_id: str) -> pd.DataFrame:
    """Queries the run's configurations could not answer: strategy, retriever, query_id,
    domain, reason, attempts, text (the query), in configuration and query order."""
    return failure_rows(store, run_id)
