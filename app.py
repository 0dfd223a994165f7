"""evalcore dashboard from a clone: ``streamlit run app.py``.

The dashboard lives in the package ``evalcore_app`` (installed with evalcore, started by
``evalcore dashboard``); this file only runs its navigation, so both ways show the same app.
"""

from __future__ import annotations

from evalcore_app.app import main

main()
