"""The page's address: what a reload (or a shared link) restores. Not a page.

- ``run_id``, ``config``, ``query_id``: the sidebar's run and configuration, and the Query
  screen's query; a link naming them opens on them.
- ``compare`` (one per configuration, ``RUN_ID|E/dense``), ``run_b``, ``k``, ``holm``: the
  Compare screen's choice (configurations, second run, hit@k, Holm switch), which the Export
  screen and the review pack use too.

Each set of parameters is applied once (a later choice on the page wins until the address
changes); every page writes the current choice back (:func:`write_url`).
"""

from __future__ import annotations

import streamlit as st

from evalcore.measures.metrics import DEFAULT_KS

LINK = ("run_id", "query_id", "config")
#: Compare's session keys by URL parameter (``compare`` holds a list).
COMPARE = {"compare": "matrix_configs", "run_b": "run_id_b", "k": "hit_k", "holm": "holm"}


def _marker(keys: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((k, tuple(st.query_params.get_all(k))) for k in sorted(keys) if k in st.query_params)


def _apply_link() -> None:
    """Apply ``?run_id=&query_id=&config=`` once per distinct set of parameters (a shared link)."""
    params = {k: st.query_params[k] for k in LINK if k in st.query_params}
    marker = tuple(sorted(params.items()))
    if not params or st.session_state.get("_params") == marker:
        return
    if "run_id" in params:
        st.session_state["run_id"] = params["run_id"]
    if "query_id" in params:
        st.session_state["query_id"] = params["query_id"]
        st.session_state["query_search"] = ""
    if "config" in params:
        st.session_state["config"] = params["config"]
        st.session_state["config_run"] = params.get("run_id", st.session_state.get("run_id"))
        st.session_state["config_why"] = "the link's configuration"
    st.session_state["_params"] = marker


def _apply_compare() -> None:
    """Apply Compare's parameters once per distinct set (a reload or a shared link); a value
    Compare cannot show (a k it does not offer) is left out."""
    marker = _marker(tuple(COMPARE))
    if not marker or st.session_state.get("_compare_params") == marker:
        return
    got = dict(marker)
    if "compare" in got:
        st.session_state["matrix_configs"] = list(got["compare"])
    if "run_b" in got:
        st.session_state["run_id_b"] = got["run_b"][0]
    if "k" in got and got["k"][0] in {str(k) for k in DEFAULT_KS}:
        st.session_state["hit_k"] = int(got["k"][0])
    if "holm" in got and got["holm"][0] in ("0", "1"):
        st.session_state["holm"] = got["holm"][0] == "1"
    st.session_state["_compare_params"] = marker


def apply_url() -> None:
    """Apply the address's parameters (see the module docstring) before any widget is drawn."""
    _apply_link()
    _apply_compare()


def _set(key: str, value: str | list[str] | None) -> None:
    if value is None or value == []:
        if key in st.query_params:
            del st.query_params[key]
    elif (st.query_params.get_all(key) if isinstance(value, list) else st.query_params.get(key)) != value:
        st.query_params[key] = value


def write_compare() -> None:
    """Put Compare's current choice in the address (only what was chosen or shown there)."""
    state = st.session_state
    _set("compare", list(state["matrix_configs"]) if "matrix_configs" in state else None)
    _set("run_b", state.get("run_id_b") or None)
    _set("k", str(state["hit_k"]) if "hit_k" in state else None)
    _set("holm", ("1" if state["holm"] else "0") if "holm" in state else None)
    state["_compare_params"] = _marker(tuple(COMPARE))


def write_url(run_id: str, config: str | None) -> None:
    """Put the run and configuration (and Compare's choice) in the URL, so a reload restores
    them, and mark those parameters as applied so they are not applied again."""
    want = {"run_id": run_id, **({"config": config} if config else {})}
    for key, value in want.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
    if not config and "config" in st.query_params:
        del st.query_params["config"]
    params = {k: st.query_params[k] for k in LINK if k in st.query_params}
    st.session_state["_params"] = tuple(sorted(params.items()))
    write_compare()
