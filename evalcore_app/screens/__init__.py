"""The dashboard's screens: one Streamlit page a file (run by ``st.navigation``, never imported),
and ``_ui``, the plumbing they share."""
