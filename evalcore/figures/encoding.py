"""Altair charts whose shorthand encodings are built by the channel classes' constructors.

``alt.Chart.encode`` turns each shorthand string (``"count:Q"``) into its channel class
through ``from_dict``, and Altair 6 rebuilds a lookup over the whole Vega-Lite schema at every
such call: about 5 ms an encoding, the largest part of the time a figure takes to build, paid
again whenever a screen reruns (a threshold slider moved). :class:`Chart` makes the same
channel objects with their constructors (``alt.X("count:Q")``, ``alt.YValue(value=2)``): the
chart's specification is the same, dict for dict (tests/figures/test_encoding.py builds every
figure both ways). A condition (``alt.condition``) is left to Altair. One caveat: Altair names the
views of a chart with a selection after a hash of its encodings' printed form, and a constant made
here prints differently from Altair's (the names differ, still unique and valid); the one chart
with a selection, the win/loss matrix, encodes no constant outside a condition.
"""

from __future__ import annotations

from typing import Any, Self

import altair as alt


def _channel_class(name: str, value: bool = False) -> type[alt.SchemaBase] | None:
    """The channel class of encoding ``name`` (``x`` -> ``alt.X``, ``strokeDash`` ->
    ``alt.StrokeDash``) or, with ``value``, its value class (``alt.XValue``); None for a name
    Altair lacks."""
    found = getattr(alt, name[:1].upper() + name[1:] + ("Value" if value else ""), None)
    return found if isinstance(found, type) and issubclass(found, alt.SchemaBase) else None


def channel(name: str, spec: Any) -> Any:
    """``spec``, as ``encode`` takes it for encoding ``name``, as a channel object: a shorthand
    string, a constant (``alt.value(2)``: ``{"value": 2}``), or a list of them (a tooltip's
    fields). A condition, a channel object or anything else passes unchanged."""
    if isinstance(spec, list | tuple):
        return [channel(name, item) for item in spec]
    if isinstance(spec, str) and (cls := _channel_class(name)) is not None:
        return cls(spec)
    if isinstance(spec, dict) and spec.keys() == {"value"} and (cls := _channel_class(name, value=True)) is not None:
        return cls(value=spec["value"])
    return spec


class Chart(alt.Chart):
    """An ``alt.Chart`` whose :meth:`encode` passes shorthands and constants as channel
    objects (:func:`channel`)."""

    def encode(self, *args: Any, **kwargs: Any) -> Self:
        return super().encode(*args, **{name: channel(name, spec) for name, spec in kwargs.items()})
