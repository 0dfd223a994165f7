"""The dashboard's screens: one Streamlit page a file (run by ``st.navigation``, never imported),
and nothing else: what they share is in :mod:`evalcore_app.ui`, the partials they draw in
:mod:`evalcore_app.partials`."""
