"""The dashboard's server: Streamlit and the HTTP API (``/api/v1``, :mod:`evalcore.api`) on one
port. ``streamlit run`` finds the ``st.App`` that ``app.py`` (the clone's, or the installed
``evalcore_app/app.py`` that ``evalcore dashboard`` runs) assigns when Streamlit imports it as
the server's module, and serves it on its uvicorn server with the same address and port rules
as before (127.0.0.1 unless the operator says otherwise).

The API comes first: :class:`evalcore.api.ApiFirst` is the ``st.App``'s own middleware, which
runs before Streamlit's, and hands every request under ``/api/v1`` to the API. The API moves with
``server.baseUrlPath`` (a dashboard served at ``/evalcore/`` answers the API at
``/evalcore/api/v1``). Streamlit's XSRF check and its auth do not cover it: the API checks a key
on every request itself (:mod:`evalcore.api.auth`).
"""

from __future__ import annotations

import os

import streamlit as st
from starlette.middleware import Middleware

from evalcore.api import ApiFirst
from evalcore.api.rate import RATE_ENV, parse_rate


def api_middleware() -> list[Middleware]:
    """The middleware that serves the API under the dashboard's ``server.baseUrlPath``, over the
    store the dashboard shows (``$EVALCORE_STORE``)."""

    parse_rate(os.environ.get(RATE_ENV))  # a bad EVALCORE_API_RATE stops the server at its start
    return [Middleware(ApiFirst, base_url_path=str(st.get_option("server.baseUrlPath") or ""))]
