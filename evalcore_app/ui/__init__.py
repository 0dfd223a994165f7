"""The dashboard's frame: what the pages share, one concept a module. Not pages.

- :mod:`.state`: every session key, declared once with its type; a typed accessor per page
  and :func:`.state.bound` (a widget bound to a key);
- :mod:`.stores`: which store is shown (the operator's, or another in its folder);
- :mod:`.cache`: :func:`.cache.cached`, the one way a page keeps what a library function returned;
- :mod:`.text`: user text shown safely (escaped Markdown, plain HTML), and the error guard;
- :mod:`.lang`: the session's language and the text and numbers in it;
- :mod:`.url`: the address (what a reload or a shared link restores);
- :mod:`.sidebar`: the store, run and configuration pickers, drawn once by the entry;
- :mod:`.frame`: what the entry hands to the page it runs (the sidebar's :class:`.sidebar.Context`);
- :mod:`.shared`: the shared threshold, claim and compared configurations;
- :mod:`.figures`: a figure with its caption and downloads.

Pages call library functions by name, through :func:`.cache.cached` when the result may be
kept (``cached(figures.matrix_figure, store, sides, 4, True)``), else directly with
:func:`.stores.store`. What a screen opens on when nobody chose (configuration, compared
configurations, threshold) comes from :mod:`evalcore.read.selection`.

A page imports this package (``from evalcore_app import ui``) and calls the names below
(``ui.cached``, ``ui.esc``, ``ctx = ui.context()``); each lives in the module of its concept.
Partials a page draws (the Questions screen's triage, the Query screen's logged query) are in
:mod:`evalcore_app.partials`.
"""

from __future__ import annotations

from evalcore_app.ui import lang, state, url
from evalcore_app.ui.cache import cached
from evalcore_app.ui.figures import downloads, methods_link, show_figure
from evalcore_app.ui.frame import context, current_frame
from evalcore_app.ui.shared import (
    chosen_sides,
    claim_or_none,
    claim_params,
    compare_sides,
    selection,
    set_threshold,
    side_key,
    threshold_state,
)
from evalcore_app.ui.sidebar import Context, no_runs_message, overview_now, require_run
from evalcore_app.ui.state import bound
from evalcore_app.ui.stores import get_store, store
from evalcore_app.ui.text import esc, guarded, plain, rank_text, show_error

__all__ = [
    "Context",
    "bound",
    "cached",
    "chosen_sides",
    "claim_or_none",
    "claim_params",
    "compare_sides",
    "context",
    "current_frame",
    "downloads",
    "get_store",
    "esc",
    "guarded",
    "lang",
    "methods_link",
    "no_runs_message",
    "overview_now",
    "plain",
    "rank_text",
    "require_run",
    "selection",
    "set_threshold",
    "show_error",
    "show_figure",
    "side_key",
    "state",
    "store",
    "threshold_state",
    "url",
]
