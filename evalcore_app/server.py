"""The dashboard's server: Streamlit and the HTTP API (``/api/v1``, :mod:`evalcore.api`) on one
port. ``streamlit run`` finds the ``st.App`` that ``app.py`` (the clone's, or the installed
``evalcore_app/app.py`` that ``evalcore dashboard`` runs) assigns when Streamlit imports it as
the server's module, and serves its routes before Streamlit's own on the same uvicorn server,
with the same address and port rules (127.0.0.1 unless the operator says otherwise).

The API's routes move with ``server.baseUrlPath`` (a dashboard served at ``/evalcore/`` answers
the API at ``/evalcore/api/v1``). Streamlit's XSRF check and its auth do not cover custom routes:
the API checks a key on every request itself (:mod:`evalcore.api.auth`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from starlette.routing import BaseRoute


def api_routes() -> list[BaseRoute]:
    """The API's routes under the dashboard's ``server.baseUrlPath``, over the store the
    dashboard shows (``$EVALCORE_STORE``)."""
    from evalcore.api import routes

    return routes(str(st.get_option("server.baseUrlPath") or ""))
