"""Chart export for slide decks: PNG and SVG rendered server-side, the data as CSV, and a
caption that traces a chart back to its run (no streamlit here).

Rendering uses vl-convert (Vega-Lite compiled and drawn in-process, no browser). Charts
from :mod:`evalcore.charts` inline their data and use a generic font family, so nothing
is fetched over the network while rendering.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class Figure:
    """One exportable chart: a slug for file names, the chart, its data and its caption."""

    slug: str
    title: str
    chart: Any  # an Altair chart
    data: Any  # pd.DataFrame
    caption: str


def _spec(chart: Any) -> str:
    spec = chart.to_json()
    if re.search(r'"url"\s*:', spec):
        raise ValueError("chart refers to data by URL; export needs inline data")
    return spec


def to_png(chart: Any, scale: float = 2.0) -> bytes:
    """PNG bytes of an Altair chart (``scale`` 2 for sharp slides)."""
    import vl_convert as vlc

    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    return vlc.vegalite_to_png(_spec(chart), scale=scale)


def to_svg(chart: Any) -> str:
    """SVG text of an Altair chart."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(_spec(chart))


def to_csv(frame: pd.DataFrame) -> bytes:
    """The chart's data as UTF-8 CSV (no index)."""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode("utf-8")


def caption(run: dict[str, Any], what: str, configuration: str | None = None, n: int | None = None,
            test: str | None = None, interval: str | None = None, when: datetime | None = None) -> str:
    """One line tracing a chart to its source.

    E.g. ``"Recall@k — run demo (1a2b3c4d, 2024-05-01 12:00); configuration all; n = 64
    in-domain queries; test: none; interval: 95% Wilson; exported 2024-05-02 09:30"``.
    """
    created = run.get("created_at")
    created_text = created.strftime("%Y-%m-%d %H:%M") if hasattr(created, "strftime") else str(created)
    parts = [
        f"{what} — run {run.get('name')} ({str(run.get('run_id'))}, {created_text})",
        f"configuration {configuration or 'all'}",
        f"n = {n} queries" if n is not None else "n = n/a",
        f"test: {test or 'none'}",
        f"interval: {interval or 'none'}",
        f"exported {(when or datetime.now()).strftime('%Y-%m-%d %H:%M')}",
    ]
    return "; ".join(parts)


def file_name(figure: Figure, run_id: str, ext: str) -> str:
    """``evalcore-<run8>-<slug>.<ext>``."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", figure.slug).strip("-")
    return f"evalcore-{run_id}-{slug}.{ext}"
