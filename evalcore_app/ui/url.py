"""The page's address: what a reload (or a shared link) restores. Not a page.

- ``run_id``, ``config``, ``query_id``: the sidebar's run and configuration, and the Query
  screen's query; a link naming them opens on them.
- ``deployment`` (Traffic only): a deployment's name; the screen opens on the run,
  configuration and threshold it points at (:func:`deployment_link`).
- ``compare`` (one per configuration, ``RUN_ID|E/dense``), ``run_b``, ``k``, ``holm``: the
  Compare screen's choice (configurations, second run, hit@k, Holm switch), which the Export
  screen and the review pack use too.

Each set of parameters is applied once (a later choice on the page wins until the address
changes); every page writes the current choice back (:func:`write_url`).
"""

from __future__ import annotations

import streamlit as st

from evalcore.measures.metrics import DEFAULT_KS
from evalcore.service import deployments
from evalcore.service.deployments import Deployment
from evalcore_app.ui.cache import cached
from evalcore_app.ui.state import Compare, Link, Query, SelectionState, Traffic
from evalcore_app.ui.stores import store
from evalcore_app.ui.text import esc, guarded

LINK = ("run_id", "query_id", "config")
#: Compare's URL parameters (``compare`` holds a list); their session keys are
#: ``Compare.matrix_configs``, ``run_id_b``, ``hit_k`` and ``holm``.
COMPARE = ("compare", "run_b", "k", "holm")
#: why the sidebar's configuration was chosen when a link named it (the sidebar then says which)
LINKED_WHY = "the link's configuration"


def _marker(keys: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((k, tuple(st.query_params.get_all(k))) for k in sorted(keys) if k in st.query_params)


def _apply_link() -> None:
    """Apply ``?run_id=&query_id=&config=`` once per distinct set of parameters (a shared link)."""
    params = {k: st.query_params[k] for k in LINK if k in st.query_params}
    marker = tuple(sorted(params.items()))
    link, chosen, query = Link(), SelectionState(), Query()
    if not params or link.params == marker:
        return
    if "run_id" in params:
        chosen.run_id = params["run_id"]
    if "query_id" in params:
        query.query_id = params["query_id"]
        query.search = ""
    if "config" in params:
        chosen.config = params["config"]
        chosen.config_run = params.get("run_id", chosen.run_id)
        chosen.config_why = LINKED_WHY
    link.params = marker


def _apply_compare() -> None:
    """Apply Compare's parameters once per distinct set (a reload or a shared link); a value
    Compare cannot show (a k it does not offer) is left out."""
    link, view = Link(), Compare()
    marker = _marker(COMPARE)
    if not marker or link.compare_params == marker:
        return
    got = dict(marker)
    if "compare" in got:
        view.matrix_configs = list(got["compare"])
    if "run_b" in got:
        view.run_id_b = got["run_b"][0]
    if "k" in got and got["k"][0] in {str(k) for k in DEFAULT_KS}:
        view.hit_k = int(got["k"][0])
    if "holm" in got and got["holm"][0] in ("0", "1"):
        view.holm = got["holm"][0] == "1"
    link.compare_params = marker


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
    view = Compare()
    _set("compare", list(view.matrix_configs or []) if Compare.matrix_configs.present() else None)
    _set("run_b", view.run_id_b or None)
    _set("k", str(view.hit_k) if Compare.hit_k.present() else None)
    _set("holm", ("1" if view.holm else "0") if Compare.holm.present() else None)
    Link().compare_params = _marker(COMPARE)


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
    Link().params = tuple(sorted(params.items()))
    write_compare()


def write_query(run_id: str, query_id: str) -> None:
    """The Query screen's address: the run and the query shown, so it can be copied and shared
    (and marked as applied)."""
    params = {"run_id": run_id, "query_id": query_id}
    st.query_params.from_dict(params)
    Link().params = tuple(sorted(params.items()))


def deployment_link() -> Deployment | None:
    """``?deployment=NAME``: the deployment the Traffic screen opens on (its run, configuration
    and threshold), put in the address for the sidebar once per version of the deployment.
    The entry applies it before it draws the sidebar."""
    name = st.query_params.get("deployment")
    if not name:
        return None
    found = guarded(lambda: cached(deployments.get_deployment, store(), name))
    if found is None:
        st.warning(f"No deployment {esc(name)} in this store: showing the run picked in the sidebar.")
        return None
    view = Traffic()
    if view.deployment_applied != (found.name, found.version):
        st.query_params["run_id"] = found.run_id
        st.query_params["config"] = found.configuration.label
        view.deployment_applied = (found.name, found.version)
    return found
