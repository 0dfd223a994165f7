"""The dashboard's server: Streamlit and the HTTP API (``/api/v1``, :mod:`evalcore.api`) on one
port. ``streamlit run`` finds the ``st.App`` that ``app.py`` (the clone's, or the installed
``evalcore_app/app.py`` that ``evalcore dashboard`` runs) assigns when Streamlit imports it as
the server's module, and serves it on its uvicorn server with the same address and port rules
as before (127.0.0.1 unless the operator says otherwise).

The API comes first: :class:`evalcore.api.ApiFirst` is the ``st.App``'s own middleware, which
runs before Streamlit's, and hands every request under ``/api/v1`` to the API. The API moves with
``server.baseUrlPath`` (a dashboard served at ``/evalcore/`` answers the API at
``/evalcore/api/v1``). Streamlit's XSRF check and its auth do not cover it: the API checks a key
on every request itself (:mod:`evalcore.api.serving.auth`).

When the server loads this module it also bounds its own work (docs/DEPLOY.md, "Limits"): its
connections and the time a request's headers may take (:mod:`evalcore.api.serving.connections`, on
Streamlit's uvicorn server), and it starts the job runner's :class:`evalcore.jobs.Dispatcher`,
which starts a queued job when a slot is free (one freed by a job whose process died included).
"""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from evalcore import jobs
from evalcore.api import ApiFirst
from evalcore.api.serving.connections import guard_server
from evalcore.api.serving.rate import check_rates
from evalcore.api.serving.settings import body_deadline, connection_limits
from evalcore.store import Store
from evalcore.store.connection import default_store_path
from evalcore_app.header_guard import HeaderGuard

_dispatcher: jobs.Dispatcher | None = None


def api_middleware() -> list[Middleware]:
    """The middleware that serves the API under the dashboard's ``server.baseUrlPath``, over the
    store the dashboard shows (``$EVALCORE_STORE``); also guards the server's connections and
    starts the job dispatcher (once a process). A bad limit variable stops the server at its
    start, with one line naming it."""
    global _dispatcher

    check_rates()  # a bad rate variable (EVALCORE_API_RATE, _GLOBAL_RATE, _AUTH_FAILURES) stops the server
    jobs.check_settings()
    body_deadline()
    guard_server(connection_limits())
    if _dispatcher is None:
        _dispatcher = jobs.Dispatcher(Store(default_store_path(), lock_timeout=2.0)).start()
    return [
        Middleware(ApiFirst, base_url_path=str(st.get_option("server.baseUrlPath") or "")),
        Middleware(HeaderGuard),  # after the API: a page request its live connection would refuse says why
    ]
