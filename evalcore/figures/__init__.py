"""Figures: Altair charts and every exportable figure assembled once (no streamlit here)."""
