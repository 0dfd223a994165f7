"""The one run summary the CLI prints after a run (``demo``, ``run``, ``import-run``,
``run-endpoint``) and for a stored run (``show``): the JSON summary, or the per-configuration
table with its heading lines and the command that opens the dashboard."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.cli.shared.common import print_json
from evalcore.read.summary import format_table, summary_json, summary_table
from evalcore.store.connection import default_store_path

if TYPE_CHECKING:
    from evalcore.store import Store

#: The legend under a built-in run's table.
BUILT_IN_LEGEND = (
    "\nrecall@k = share of in-domain queries with a correct chunk at rank <= k; "
    "destroyed = ground truths no chunk holds whole."
)
#: The legend under an imported or endpoint run's table.
EXTERNAL_LEGEND = "\nrecall@k and MRR over the hits the run gave; destroyed = ground truths no chunk holds whole."


def dashboard_hint(store: Store) -> str:
    """The run's last line: the command that opens the dashboard on the store the run was
    written to (``--store`` named when it is not the one the dashboard opens by default)."""
    if Path(store.path).resolve() == default_store_path().resolve():
        return "Open the dashboard:  python -m evalcore dashboard   (in a clone also: streamlit run app.py)"
    return f"Open the dashboard:  python -m evalcore dashboard --store {shlex.quote(str(store.path))}"


def print_summary(
    store: Store,
    run_id: str,
    *,
    as_json: bool,
    heading: Sequence[str] = (),
    wall: float | None = None,
    extra: dict[str, Any] | None = None,
    legend: str | None = None,
    hint: bool = False,
) -> None:
    """Print run ``run_id``'s summary.

    As JSON: :func:`evalcore.read.summary.summary_json`, plus ``wall_seconds`` when ``wall``
    is given and the ``extra`` keys. As text: the ``heading`` lines, a blank line, the table,
    then the ``legend`` and the dashboard hint when asked for."""
    if as_json:
        out = summary_json(store, run_id)
        if wall is not None:
            out["wall_seconds"] = round(wall, 2)
        out.update(extra or {})
        print_json(out)
        return
    for line in heading:
        print(line)
    print()
    print(format_table(summary_table(store, run_id)))
    if legend is not None:
        print(legend)
    if hint:
        print(dashboard_hint(store))


def print_runs(rows: list[dict[str, Any]]) -> None:
    """One line per run (newest first), as ``evalcore list`` prints them."""
    if not rows:
        print("no runs yet; make one with: python -m evalcore demo")
        return
    for r in rows:
        took = ""
        if r["finished_at"] is not None and r["finished_at"] == r["finished_at"]:
            took = f"{(r['finished_at'] - r['created_at']).total_seconds():.0f} s"
        line = (
            f"{r['run_id']}  {r['status']:<9} {r['name']:<16} {r['strategies'] or '':<12} "
            f"{r['retrievers'] or '':<22} {took}"
        )
        if r["status"] in ("failed", "cancelled") and r["reason"]:
            line += f"  ({r['reason']})"
        print(line)
