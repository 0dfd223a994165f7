"""evalcore dashboard from a clone: ``streamlit run app.py``.

The dashboard lives in the package ``evalcore_app`` (installed with evalcore, started by
``evalcore dashboard``); this file only runs its navigation, so both ways show the same app.
``streamlit run`` first imports this file as the module ``app`` and serves the ``st.App``
assigned below: the dashboard and the HTTP API (``/api/v1``) on one port (evalcore_app/server.py).
"""

from __future__ import annotations

import streamlit as st

from evalcore_app.app import main

if __name__ == "__main__":  # Streamlit runs this file for every page view (and AppTest)
    main()
elif __name__ == "app":  # `streamlit run app.py` imports it as the server's module
    from evalcore_app.server import api_middleware

    app = st.App(__file__, middleware=api_middleware())
