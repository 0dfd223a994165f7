"""``python -m evalcore compare``: a run's configurations side by side, in the terminal.

Two blocks, each fitted to the terminal's width (80 to 120 columns hold 21 configurations):

- the per-configuration table: recall@k for k = 1, 4, 8, 20 with 95% Wilson intervals
  (every k when the width allows, else the compared metric's k only), MRR and destroyed
  ground truths (:func:`evalcore.read.summary.summary_table`, the figures ``show`` prints);
- the paired win/loss matrix at hit@k (:func:`evalcore.read.compare.compare`): rows and columns are
  numbered, a cell is the row's wins minus losses against the column, ``*`` marks p < 0.05
  (Holm-adjusted with ``--holm``). Columns that do not fit go into further blocks; the pairs
  that differ significantly are then listed in full. Configuration names are never cut.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import TYPE_CHECKING

from evalcore.configurations import model_label
from evalcore.errors import NotComparable, StoreError
from evalcore.inputs.question_sets import versions_note
from evalcore.measures.stats import ALPHA, SIGN_TEST, format_p_plain, sample_statement
from evalcore.read.compare import compare
from evalcore.read.refs import resolve_run
from evalcore.read.runs import run_configurations
from evalcore.read.summary import summary_table
from evalcore.regression.gate import gate_metric

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store

KS = (1, 4, 8, 20)


def terminal_width(default: int = 100) -> int:
    """Columns of the terminal (``$COLUMNS`` when set), at least 60."""
    return max(60, shutil.get_terminal_size((default, 24)).columns)


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f},{high:.3f}]"


def config_table(table: pd.DataFrame, k: int, width: int, prefix: str = "") -> list[str]:
    """Lines of the per-configuration table (a :func:`evalcore.read.summary.summary_table` frame).

    The widest layout that fits ``width`` wins: intervals for every k; else for the compared
    metric's k only; else no interval. Configuration names are never cut.
    """
    names = [prefix + c for c in table["config"]]
    records = table.to_dict("records")

    def layout(intervals: set[int]) -> list[str]:
        columns: list[tuple[str, list[str]]] = [("n", [str(int(r["queries"])) for r in records])]
        for kk in KS:
            if kk in intervals:
                columns.append(
                    (
                        f"R@{kk} [95% Wilson]",
                        [_interval(r[f"recall@{kk}"], r[f"recall@{kk} low"], r[f"recall@{kk} high"]) for r in records],
                    )
                )
            else:
                columns.append((f"R@{kk}", [f"{r[f'recall@{kk}']:.3f}" for r in records]))
        columns.append(("MRR", [f"{r['mrr']:.3f}" for r in records]))
        columns.append(("destroyed", [str(int(r["destroyed"])) for r in records]))
        name_w = max([len("config")] + [len(n) for n in names])
        widths = [max([len(head)] + [len(v) for v in values]) for head, values in columns]
        head = f"{'config':<{name_w}}" + "".join(f"  {h:>{w}}" for (h, _), w in zip(columns, widths, strict=True))
        lines = [head, "-" * len(head)]
        for i, name in enumerate(names):
            lines.append(
                f"{name:<{name_w}}"
                + "".join(f"  {values[i]:>{w}}" for (_, values), w in zip(columns, widths, strict=True))
            )
        return lines

    options = [set(KS), {k}, set()]
    for choice in options:
        lines = layout(choice)
        if len(lines[0]) <= width:
            return lines
    return lines


def matrix_lines(matrix: pd.DataFrame, labels: list[str], width: int) -> list[str]:
    """The win/loss matrix as numbered rows and columns, split into column blocks that fit ``width``."""
    cell = {
        (r, c): (wins - losses, s)
        for r, c, wins, losses, s in zip(
            matrix["row"], matrix["column"], matrix["wins"], matrix["losses"], matrix["significant"], strict=True
        )
    }
    index = {label: i + 1 for i, label in enumerate(labels)}
    texts = {
        key: f"{net:+d}{'*' if sig else ''}" if net else ("0*" if sig else "0") for key, (net, sig) in cell.items()
    }
    col_w = max([len(str(len(labels)))] + [len(t) for t in texts.values()]) + 1
    name_w = max(len(x) for x in labels)
    row_head = len(str(len(labels))) + 1 + name_w + 1
    per_block = max(1, (width - row_head) // col_w)
    lines: list[str] = []
    for start in range(0, len(labels), per_block):
        block = labels[start : start + per_block]
        if start:
            lines.append("")
        lines.append(" " * row_head + "".join(f"{index[c]:>{col_w}}" for c in block))
        for r in labels:
            body = "".join(f"{('·' if r == c else texts[(r, c)]):>{col_w}}" for c in block)
            lines.append(f"{index[r]:>{len(str(len(labels)))}} {r:<{name_w}} {body}")
    return lines


def significant_pairs(matrix: pd.DataFrame) -> list[str]:
    """One line per pair that differs significantly: ``better  beats  worse  +w/-l  p``."""
    sig = matrix[matrix["significant"] & (matrix["wins"] > matrix["losses"])]
    if sig.empty:
        return []
    left_w = max(len(x) for x in sig["row"])
    right_w = max(len(x) for x in sig["column"])
    out = []
    for r in sig.sort_values(["p_shown", "row", "column"]).to_dict("records"):
        adjusted = f" (unadjusted {format_p_plain(r['p_value'])})" if r["p_shown"] != r["p_value"] else ""
        out.append(
            f"  {r['row']:<{left_w}}  beats  {r['column']:<{right_w}}  +{r['wins']}/-{r['losses']}  "
            f"p {format_p_plain(r['p_shown'])}{adjusted}"
        )
    return out


def compare_text(
    store: Store,
    run: str,
    other: str | None = None,
    metric: str = "hit@4",
    holm: bool = False,
    width: int | None = None,
) -> str:
    """The terminal report of ``compare`` for one run, or two runs on the same queries."""
    width = width or terminal_width()

    k = int(gate_metric(metric).k)  # type: ignore[arg-type]
    first = resolve_run(store, run)
    second = resolve_run(store, other) if other else None
    runs = [first] + ([second] if second and second.run_id != first.run_id else [])
    two = len(runs) == 2
    tags = {r.run_id: (f"r{i + 1}:" if two else "") for i, r in enumerate(runs)}

    lines: list[str] = []
    for r in runs:
        line = f"{tags[r.run_id]}{' ' if two else ''}run {r.name} {r.run_id}"
        label = model_label(r.model, r.settings)
        model = f", {label}" if label else ""
        lines.append(line + model if len(line) + len(model) <= width else line)
    if two:
        note = versions_note(runs[0], runs[1])
        if note is not None:
            lines += textwrap.wrap("note: " + note, width)
    lines.append("")
    for r in runs:
        table = summary_table(store, r.run_id)
        if table.empty:
            lines.append(f"run {r.run_id} has no scored in-domain query")
            continue
        lines += config_table(table, k, width, tags[r.run_id])
        lines.append("")
    sides = [side for r in runs for side in run_configurations(store, r.run_id)]
    if len(sides) < 2:
        lines.append("one configuration: no win/loss matrix")
        return "\n".join(lines)
    try:
        comparison = compare(store, sides, k, adjust=holm)
    except (NotComparable, StoreError) as exc:  # runs that did not answer the same queries
        note = versions_note(runs[0], runs[1]) if two else None
        raise type(exc)(f"{exc}; {note}" if note else str(exc)) from None
    short = {
        label: tags[side.run_id] + side.configuration.label
        for side, label in zip(comparison.sides, comparison.labels, strict=True)
    }
    matrix = comparison.matrix
    matrix = matrix.assign(row=matrix["row"].map(short), column=matrix["column"].map(short))
    labels = list(dict.fromkeys(list(matrix["row"]) + list(matrix["column"])))
    pairs = len(labels) * (len(labels) - 1) // 2
    which = f"Holm-adjusted over {pairs} pairs" if holm else "unadjusted; --holm adjusts"
    n = int(matrix["n"].iloc[0])
    lines += textwrap.wrap(
        f"Win/loss at hit@{k} on {n} queries: a cell is the row's wins minus its losses against the "
        f"column (wins = queries only the row finds in the top {k}); * p < {ALPHA:g}, {SIGN_TEST} "
        f"({which}).",
        width,
    )
    lines += matrix_lines(matrix, labels, width)
    sig = significant_pairs(matrix)
    lines.append("")
    lines.append(
        f"Significant at p < {ALPHA:g} ({which}):"
        if sig
        else f"No pair differs significantly at p < {ALPHA:g} ({which})."
    )
    lines += sig
    lines += textwrap.wrap(sample_statement(n), width)
    return "\n".join(lines)
