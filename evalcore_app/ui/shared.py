"""The selection every screen shares beyond the sidebar: the one threshold (Threshold, Query,
Export, Traffic), the threshold claim's inputs, the compared configurations; and all of it
together for the Export screen and the review pack (:func:`selection`)."""

from __future__ import annotations

from typing import Any

from evalcore.figures.build import Selection
from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, ClaimError
from evalcore.read import claims
from evalcore.read import selection as defaults
from evalcore.records import RunConfiguration
from evalcore_app.ui import state
from evalcore_app.ui.cache import cached
from evalcore_app.ui.sidebar import Context
from evalcore_app.ui.stores import store


def threshold_state(ctx: Context) -> tuple[float, str]:
    """The one threshold of the selected run and configuration, and where it came from.

    Set on the Threshold screen in this session; else the latest decision saved for this
    configuration; else the suggestion at cost ratio 3 (else the fallback 0.5).
    """
    view = state.Threshold()
    key = f"{ctx.run_id}|{ctx.config.label}"
    if view.threshold_for == key and view.threshold is not None:
        return float(view.threshold), view.threshold_source
    t, source = cached(defaults.default_threshold, store(), ctx.run_id, ctx.config, claim_or_none(ctx))
    set_threshold(ctx, t, source)
    return t, source


def claim_params() -> tuple[float, float, float]:
    """The threshold claim's (alpha, beta, confidence) set on the Threshold screen (defaults
    0.05, 0.20, 0.95)."""
    view = state.Threshold()
    return (
        float(DEFAULT_ALPHA if view.claim_alpha is None else view.claim_alpha),
        float(DEFAULT_BETA if view.claim_beta is None else view.claim_beta),
        float(DEFAULT_CONFIDENCE if view.claim_confidence is None else view.claim_confidence),
    )


def claim_or_none(ctx: Context, splits: int | None = None) -> Any:
    """The selected configuration's threshold claim at :func:`claim_params` (with the held-out
    check over ``splits``), or None when none can be made (no off-topic or answerable query)."""
    try:
        return cached(claims.claim_of, store(), ctx.run_id, ctx.config, *claim_params(), splits)
    except ClaimError:
        return None


def set_threshold(ctx: Context, t: float, source: str) -> None:
    view = state.Threshold()
    view.threshold = float(t)
    view.threshold_for = f"{ctx.run_id}|{ctx.config.label}"
    view.threshold_source = source


def side_key(side: RunConfiguration) -> str:
    return f"{side.run_id}|{side.configuration.label}"


def compare_sides(ctx: Context) -> tuple[list[RunConfiguration], list[str]]:
    """Every configuration the Compare screen can pick (this run's, and the second run's when
    one is chosen) and the keys of the default choice."""
    available, default = cached(defaults.compared, store(), ctx.run_id, state.Compare().run_id_b or "")
    return available, [side_key(s) for s in default]


def chosen_sides(ctx: Context) -> tuple[RunConfiguration, ...]:
    """The Compare screen's chosen configurations (its default when nothing was chosen)."""
    available, default = compare_sides(ctx)
    by_key = {side_key(s): s for s in available}
    chosen = state.Compare().matrix_configs
    keys = [k for k in (default if chosen is None else chosen) if k in by_key] or default
    return tuple(by_key[k] for k in keys)


def selection(ctx: Context) -> Selection:
    """What the screens show now, for the Export screen and the review pack."""
    t, source = threshold_state(ctx)
    view = state.Compare()
    return Selection(
        ctx.run_id,
        ctx.config,
        t,
        source,
        chosen_sides(ctx),
        int(view.hit_k),
        bool(view.holm),
        claim_params(),
    )
