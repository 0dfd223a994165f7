"""A figure in the dashboard's language: chart titles, axis and legend titles, tooltips, the
chart's number format (Vega-Lite's format locale) and the caption (no streamlit here).

The charts are drawn in English (:mod:`evalcore.figures.charts`); ``build.localize`` rewrites
the chart's Vega-Lite spec: every title and text it shows is looked up in the catalog (the
texts below are the message ids; a title with figures is matched to its template), category
names in the chart's data, scales and conditions are translated alike (so colours and dashes
still match), and ``config.locale`` sets the decimal mark, so axes and tooltips write
``0,5`` where the text does. A figure's data (its CSV) is never translated.
"""

from __future__ import annotations

import re
from typing import Any

from evalcore.i18n import N_, Translator, matches
from evalcore.i18n.templates import SOURCES

#: Every text the charts and captions write in English (message ids), templates with {fields}.
TEXTS = (
    # captions (build.py)
    N_("Recall@k per configuration"),
    N_("MRR per configuration"),
    N_("{n} in-domain queries"),
    N_("{n} in-domain queries (paired)"),
    N_("{n} in-domain and {m} out-of-domain queries"),
    N_("Destroyed answers per strategy"),
    N_("Destroyed answers"),
    N_("Destroyed answers · run {run}"),
    N_("every strategy"),
    N_("{n} destroyed ground truths over {m} strategies"),
    N_("{n} chunks over {m} strategies"),
    N_("Win/loss matrix at hit@{k}"),
    N_("{test}, Holm-adjusted over the {n} pairs shown"),
    N_("{test}, Holm-adjusted over the {n} pair shown"),
    N_("{test}, unadjusted"),
    N_("Threshold sweep (rates)"),
    N_("Threshold sweep (counts)"),
    N_("{what}; shaded: {band}"),
    N_("{what}; axis: {axis}"),
    N_("Distances in and out of domain"),
    N_("Distances"),
    N_("Index health per strategy"),
    N_("Index health"),
    N_("a row's counts hold for t above its threshold, up to the next row's (gate: {rule})"),
    N_("95% Wilson interval (statsmodels proportion_confint, method='wilson')"),
    N_("two-sided exact sign test (scipy binomtest) on discordant queries"),
    N_("{name} {id} (created {when})"),
    N_(
        "the claim (bluffs <= {alpha} with {confidence} confidence, lost <= {beta}; {n_ood} off-topic, "
        "{n_answerable} answerable) holds for {low} < t <= {high}"
    ),
    N_("all"),
    N_("none"),
    # charts.py
    N_("retriever"),
    N_("recall (95% Wilson interval)"),
    N_("configuration"),
    N_("recall"),
    N_("Wilson low"),
    N_("Wilson high"),
    N_("hits"),
    N_("definition"),
    N_("strategy"),
    N_("destroyed ground truths"),
    N_("queries affected"),
    N_("second configuration (its wins are the first's losses)"),
    N_("second configuration (its wins are the first's losses): numbered as the rows"),
    N_("difference ({p_name} < {alpha})"),
    N_("first"),
    N_("second"),
    N_("unadjusted p"),
    N_("Holm-adjusted p"),
    N_("chunks"),
    N_("share of real questions answered"),
    N_("share of the group"),
    N_("off-topic questions answered (bluffs)"),
    N_("real questions answered from a right source"),
    N_("real questions answered"),
    # threshold_charts.py
    N_("overlap from"),
    N_("overlap to"),
    N_("queries"),
    N_("from"),
    N_("to"),
    N_("dashed: worst in-domain answer and best out-of-domain top hit"),
    N_("threshold t (the gate keeps top-4 hits with {rule})"),
    N_("threshold claim"),
    N_("claim holds"),
    N_("chosen threshold"),
    N_("Bluffs, lost answers and refusals against the threshold"),
    N_("Bluffs, lost answers and refusals against the threshold (rates)"),
    N_("Bluffs, lost answers and refusals against the threshold (counts)"),
    N_("shaded: 95% Wilson interval of each rate"),
    N_("queries of each group"),
    N_("bluffs (out-of-domain)"),
    N_("lost answers (in-domain)"),
    N_("refused (in-domain)"),
    N_("{what} (n = {n})"),
    N_("in-domain: distance to the answer"),
    N_("in-domain: distance of the top hit"),
    N_("out-of-domain: distance of the top hit"),
    N_("in-domain: score of the answer"),
    N_("in-domain: score of the top hit"),
    N_("out-of-domain: score of the top hit"),
    N_("worst in-domain answer {value}"),
    N_("best out-of-domain top hit {value}"),
    N_("dashed: worst in-domain answer and best out-of-domain top hit; shaded: where the groups overlap"),
    N_("In-domain against out-of-domain distances"),
    # charts.py: titles and subtitles, the win/loss legend
    N_("point: recall; line: 95% Wilson interval"),
    N_("mean of 1/rank of the first correct chunk (0 when none)"),
    N_("ground truths no chunk holds whole"),
    N_("Chunks per strategy"),
    N_("label: chunks over the model's 256-piece window"),
    N_("Wins and losses at hit@{k}"),
    N_("row: the first configuration; cell: its wins/losses"),
    N_("against the column's, and their {p_name}"),
    N_("What the gate does, read as coverage"),
    N_("each point is a threshold; left: refuse more, right: answer more"),
    N_("significantly better"),
    N_("significantly worse"),
    N_("not significant, more wins"),
    N_("not significant, more losses"),
    N_("not significant, even"),
    N_("same configuration"),
    # traffic_charts.py
    N_("{unit} starting (UTC)"),
    N_("refused share (95% Wilson)"),
    N_("gate value (smallest top-4 distance)"),
)
#: What a figure's texts are matched against: its own texts and the library's sentences (a
#: caption's n, a threshold's source).
TEMPLATES = TEXTS + SOURCES
_SKIP = {"field", "type", "aggregate", "timeUnit", "name", "$schema", "mark", "orient", "anchor", "font", "align"}
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _word(tr: Translator, text: str) -> str:
    """A category or label: translated only when it is a message id (data stays data)."""
    return tr.gettext(text)


def _title(tr: Translator, text: str) -> str:
    return tr.rewrite(text, TEMPLATES)


def _expr(tr: Translator, text: str) -> str:
    """Quoted category names inside a Vega expression (``datum.series == 'refused (in-domain)'``)."""
    return _QUOTED.sub(lambda m: "'" + _word(tr, m.group(1)).replace("'", "\\'") + "'", text)


def _walk(tr: Translator, node: Any, key: str = "") -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "datasets" and isinstance(v, dict):
                out[k] = {name: [_row(tr, row) for row in rows] for name, rows in v.items()}
            elif k in ("title", "subtitle", "text") and isinstance(v, str | list):
                out[k] = (
                    [_title(tr, x) if isinstance(x, str) else x for x in v] if isinstance(v, list) else _title(tr, v)
                )
            elif k in ("test", "labelExpr", "expr") and isinstance(v, str):
                out[k] = _expr(tr, v)
            elif k in ("domain", "values") and isinstance(v, list):
                out[k] = [_word(tr, x) if isinstance(x, str) else x for x in v]
            elif k == "value" and isinstance(v, str) and key in ("text",):
                out[k] = _title(tr, v)
            elif k in _SKIP:
                out[k] = v
            else:
                out[k] = _walk(tr, v, k)
        return out
    if isinstance(node, list):
        return [_walk(tr, x, key) for x in node]
    return node


_FIGURE = re.compile(r"[tp\s=<>+\-/\d.%()\[\],;]*\d[tp\s=<>+\-/\d.%()\[\],;]*")


def _cell(tr: Translator, text: str) -> str:
    """A text cell of the chart's data: a message id translated, a figure (``t = 0.500``,
    ``0.031``, ``< 0.001``) in the locale, anything else (a configuration's name) as it is."""
    if _FIGURE.fullmatch(text):
        return tr.numbers_in(text)
    if matches(text, TEMPLATES):
        return tr.rewrite(text, TEMPLATES)
    return _word(tr, text)


def _row(tr: Translator, row: Any) -> Any:
    if not isinstance(row, dict):
        return row
    return {k: (_cell(tr, v) if isinstance(v, str) else v) for k, v in row.items()}


def localize_spec(spec: dict[str, Any], tr: Translator) -> dict[str, Any]:
    """A Vega-Lite spec with its texts in ``tr``'s language and its number format locale."""
    out: dict[str, Any] = _walk(tr, spec)
    config = dict(out.get("config", {}))
    config["locale"] = {"number": tr.vega_format_locale()}
    out["config"] = config
    return out
