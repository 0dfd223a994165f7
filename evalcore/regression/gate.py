"""The regression gate (CI.md "What the gate decides"): is a candidate run significantly worse than a baseline?

Baseline and candidate answered the same queries. For hit@k and each configuration compared,
the candidate is paired with the baseline query by query: **wins** are queries only the
candidate gets, **losses** queries only the baseline gets, ties the rest (METHODS.md "Correct hits", candidate
first); p is the two-sided exact sign test on the discordant queries
(:func:`evalcore.measures.stats.sign_test`, scipy's ``binomtest``). With several configurations, p is
Holm-adjusted over them. A configuration **regresses** when ``losses > wins`` and its
(adjusted) p is below ``alpha``. Two optional floors add reasons to fail:

- ``min_effect`` D: the candidate's hit@k is lower than the baseline's by D or more
  (``(baseline hits - candidate hits) / n >= D``), significant or not;
- the refusal contract (``threshold_from_decision``): the baseline's latest saved threshold
  t for that configuration is applied to both runs' out-of-domain queries (the gate of
  METHODS.md "The refusal threshold": a bluff is an out-of-domain query with a top-4 hit at distance < t). Paired on
  those queries, **new bluffs** are queries only the candidate answers, **fixed** ones queries
  only the baseline answers; the candidate fails when new > fixed and the sign test's p
  (Holm-adjusted over the configurations checked) is below ``alpha``.

Every report carries the minimum detectable difference at its n (:func:`evalcore.measures.stats.
detectable_difference`), at the level the first Holm step needs (``alpha / m``), so that "no
significant regression" is never read as "no regression".

A run reference is ``RUN`` or ``RUN:CONFIG`` (:mod:`evalcore.read.refs`); the report model is
:mod:`evalcore.regression.model`, the refusal-contract checks :mod:`evalcore.regression.bluffs`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.configurations import failures, model_label
from evalcore.errors import ConfigError, NotComparable
from evalcore.inputs.question_sets import versions_note
from evalcore.measures.metrics import hit_at_k, parse_metric
from evalcore.measures.stats import (
    ALPHA,
    detectable_difference,
    paired_test,
    sample_statement,
    sign_test,
    wilson_interval,
)
from evalcore.measures.stats import holm as holm_adjust
from evalcore.read.queries import scored_texts
from evalcore.read.refs import Ref, parse_ref, resolve_run
from evalcore.read.results import scored_ranks
from evalcore.read.runs import configurations
from evalcore.regression.bluffs import axis_of, bluff_outcomes, claim_check, saved_threshold
from evalcore.regression.model import BluffCheck, ConfigResult, GateReport, QueryChange, Side

if TYPE_CHECKING:
    from evalcore.measures.metrics import Metric
    from evalcore.records import Run
    from evalcore.store import Store

log = logging.getLogger(__name__)

DEFAULT_METRIC = "hit@4"
DEFAULT_ALPHA = ALPHA  #: the significance level (:data:`evalcore.measures.stats.ALPHA`)


# --- checks -------------------------------------------------------------------------------


def gate_metric(name: str) -> Metric:
    """Parse ``hit@k`` / ``recall@k`` (:func:`evalcore.measures.metrics.parse_metric`); the gate pairs a
    yes/no per query, so ``mrr`` is refused with a ConfigError saying why."""
    metric = parse_metric(name)
    if metric.k is None:
        raise ConfigError(
            f"metric {name!r}: the gate's sign test pairs a yes/no outcome per query (hit@k, recall@k); "
            "mrr has no such outcome, use hit@k or recall@k"
        )
    return metric


#: The smallest significance level the gate takes (with Holm's correction it is divided by the
#: number of configurations: far below it, the level underflows to 0).
MIN_ALPHA = 1e-6


def _alpha(value: float) -> float:
    value = float(value)
    if not MIN_ALPHA <= value < 1.0:
        raise ConfigError(f"alpha must be a number in [{MIN_ALPHA:g}, 1), got {value!r}")
    return value


def _same_queries(store: Store, baseline: Run, candidate: Run, domain: str) -> dict[str, str]:
    """{query id: text} both runs scored in ``domain``; NotComparable (naming a few ids) unless the
    runs hold the same queries with the same texts."""
    a = scored_texts(store, baseline.run_id, domain)
    b = scored_texts(store, candidate.run_id, domain)
    what = "in-domain" if domain == "in" else "out-of-domain"
    if set(a) != set(b):

        def few(ids: set[str]) -> str:
            if not ids:
                return "none"
            shown = sorted(ids)[:3]
            return f"{len(ids)} ({', '.join(shown)}{', ...' if len(ids) > 3 else ''})"

        raise NotComparable(
            f"baseline {baseline.run_id} and candidate {candidate.run_id} did not answer the same "
            f"{what} queries: {few(set(a) - set(b))} only in the baseline, {few(set(b) - set(a))} only in the candidate"
        )
    changed = sorted(q for q in a if a[q] != b[q])
    if changed:
        raise NotComparable(
            f"baseline {baseline.run_id} and candidate {candidate.run_id}: {len(changed)} {what} "
            f"queries have the same id but another text (e.g. {changed[0]!r})"
        )
    if not a and domain == "in":
        raise NotComparable(f"run {baseline.run_id} has no scored in-domain query")
    return a


def _pairs(store: Store, baseline: Run, candidate: Run, base_ref: Ref, cand_ref: Ref) -> list[tuple[str, str]]:
    """(baseline configuration, candidate configuration) pairs to compare."""
    have_b = [c.label for c in configurations(store, baseline.run_id)]
    have_c = [c.label for c in configurations(store, candidate.run_id)]

    def check(configuration: str, have: list[str], run: Run, side: str) -> str:
        if configuration not in have:
            raise ConfigError(
                f"{side} run {run.name} {run.run_id} has no configuration {configuration!r}; it has {', '.join(have)}"
            )
        return configuration

    b = base_ref.configuration or cand_ref.configuration
    c = cand_ref.configuration or base_ref.configuration
    if b and c:
        return [(check(b, have_b, baseline, "baseline"), check(c, have_c, candidate, "candidate"))]
    shared = [x for x in have_b if x in have_c]
    if not shared:
        raise ConfigError(
            f"baseline {baseline.run_id} ({', '.join(have_b)}) and candidate "
            f"{candidate.run_id} ({', '.join(have_c)}) share no configuration; "
            "name one on each side, e.g. --baseline RUN:E/hybrid --candidate RUN:G/hybrid"
        )
    return [(x, x) for x in shared]


def ranks_by_configuration(store: Store, run_id: str) -> dict[str, dict[str, int | None]]:
    """{configuration: {query id: first correct rank or None}} over a run's scored in-domain
    queries, all configurations in one read."""
    import pandas as pd

    df = scored_ranks(store, run_id)
    out: dict[str, dict[str, int | None]] = {}
    for strategy, retriever, query_id, rank in df.itertuples(index=False):
        out.setdefault(f"{strategy}/{retriever}", {})[str(query_id)] = None if pd.isna(rank) else int(rank)
    return out


def _failed(store: Store, run_id: str) -> dict[str, set[str]]:
    """{configuration: ids of the queries it could not answer} (failed endpoint calls)."""
    out: dict[str, set[str]] = {}
    for row in failures(store, run_id).itertuples(index=False):
        out.setdefault(f"{row.strategy}/{row.retriever}", set()).add(str(row.query_id))
    return out


def _changes(
    ids: tuple[str, ...], texts: dict[str, str], base: dict[str, int | None], cand: dict[str, int | None]
) -> tuple[QueryChange, ...]:
    """QueryChange records (with both first correct ranks) for ``ids``, in the given order."""
    return tuple(QueryChange(q, texts.get(q, ""), base.get(q), cand.get(q)) for q in ids)


def run_gate(
    store: Store,
    baseline: str | Ref,
    candidate: str | Ref,
    metric: str = DEFAULT_METRIC,
    alpha: float = DEFAULT_ALPHA,
    holm: bool = True,
    min_effect: float | None = None,
    threshold_from_decision: bool = False,
) -> GateReport:
    """Gate ``candidate`` against ``baseline`` (references as in :func:`evalcore.read.refs.parse_ref`).

    Raises an EvalcoreError (the CLI's exit 2) for bad input: an unknown or incomplete run, an
    unknown configuration, runs that did not answer the same queries, an unknown or unpaired
    metric, alpha outside (0, 1), a min_effect outside [0, 1], or ``threshold_from_decision``
    when no compared configuration has a saved threshold in the baseline.
    """
    base_ref = baseline if isinstance(baseline, Ref) else parse_ref(baseline)
    cand_ref = candidate if isinstance(candidate, Ref) else parse_ref(candidate)
    parsed = gate_metric(metric)
    k = int(parsed.k)  # type: ignore[arg-type]
    alpha = _alpha(alpha)
    if min_effect is not None:
        min_effect = float(min_effect)
        if not 0.0 <= min_effect <= 1.0:
            raise ConfigError(f"--min-effect must lie in [0, 1] (a difference of {parsed.name}), got {min_effect!r}")
    base_run = resolve_run(store, base_ref.run)
    cand_run = resolve_run(store, cand_ref.run)
    for run in (base_run, cand_run):  # a cutoff beyond the ranks a run kept would count misses as hits@k-depth
        depth = run.settings.get("top_n") if isinstance(run.settings, Mapping) else None
        if isinstance(depth, int) and not isinstance(depth, bool) and k > depth:
            raise ConfigError(
                f"metric {parsed.name!r}: k = {k:,} is above the depth of run {run.name!r} (it kept the top "
                f"{depth} of each query); use k in [1, {depth}]"
            )
    try:
        texts = _same_queries(store, base_run, cand_run, "in")
    except NotComparable as exc:
        note = versions_note(base_run, cand_run)
        raise NotComparable(f"{exc}; {note}" if note else str(exc)) from None
    pairs = _pairs(store, base_run, cand_run, base_ref, cand_ref)
    n = len(texts)
    m = len(pairs)
    level = alpha / m if (holm and m > 1) else alpha

    ranks = {
        "b": ranks_by_configuration(store, base_run.run_id),
        "c": ranks_by_configuration(store, cand_run.run_id),
    }
    failed = {"b": _failed(store, base_run.run_id), "c": _failed(store, cand_run.run_id)}
    raw = []
    notes: list[str] = []
    for b_cfg, c_cfg in pairs:
        b_hits = {q: hit_at_k(r, k) for q, r in ranks["b"].get(b_cfg, {}).items()}
        c_hits = {q: hit_at_k(r, k) for q, r in ranks["c"].get(c_cfg, {}).items()}
        b_out, c_out = failed["b"].get(b_cfg, set()), failed["c"].get(c_cfg, set())
        if set(b_hits) | b_out != set(texts) or set(c_hits) | c_out != set(texts):
            raise NotComparable(f"{b_cfg} / {c_cfg}: results do not cover the runs' {n} scored in-domain queries")
        left_out = (b_out | c_out) & set(texts)
        if left_out:  # queries a side could not answer (failed endpoint calls): paired on the others
            b_hits = {q: v for q, v in b_hits.items() if q not in left_out}
            c_hits = {q: v for q, v in c_hits.items() if q not in left_out}
            name = b_cfg if b_cfg == c_cfg else f"{b_cfg} -> {c_cfg}"
            shown = ", ".join(sorted(left_out)[:3]) + (", ..." if len(left_out) > 3 else "")
            notes.append(
                f"{name}: {len(left_out)} of {n} queries left out, not counted as losses: "
                f"{'the baseline' if b_out and not c_out else 'the candidate' if c_out and not b_out else 'a side'}"
                f" could not answer them (failed calls: {shown}); paired on {len(b_hits)}"
            )
        if not b_hits:
            name = b_cfg if b_cfg == c_cfg else f"{b_cfg} -> {c_cfg}"
            raise NotComparable(
                f"{name}: no scored in-domain query was answered by both runs (all {n} failed on "
                f"{'the baseline' if b_out >= set(texts) else 'the candidate' if c_out >= set(texts) else 'a side'}"
                "); nothing to gate"
            )
        raw.append((b_cfg, c_cfg, b_hits, c_hits, paired_test(c_hits, b_hits)))
    p_adjusted = holm_adjust([t.p_value for *_, t in raw]) if holm else [t.p_value for *_, t in raw]

    bluff_checks: dict[int, BluffCheck] = {}
    bluff_notes: dict[int, str] = {}
    if threshold_from_decision:
        ood = _same_queries(store, base_run, cand_run, "out")
        if not ood:
            raise NotComparable(
                f"--threshold-from-decision: baseline {base_run.run_id} has no out-of-domain queries to count bluffs on"
            )
        found = []
        for i, (b_cfg, c_cfg, *_rest) in enumerate(raw):
            decision = saved_threshold(store, base_run.run_id, b_cfg)
            if decision is None:
                bluff_notes[i] = f"no saved threshold for {b_cfg} in the baseline run: bluffs not checked"
                continue
            t = float(decision["threshold"])
            b_axis, c_axis = axis_of(store, base_run.run_id, b_cfg), axis_of(store, cand_run.run_id, c_cfg)
            if b_axis != c_axis:
                bluff_notes[i] = (
                    f"the baseline's threshold for {b_cfg} reads {b_axis.label}, the candidate's gate "
                    f"reads {c_axis.label}: one threshold cannot serve both; bluffs not checked"
                )
                continue
            b_bluff = bluff_outcomes(store, base_run.run_id, b_cfg, ood, t, failed["b"].get(b_cfg, set()))
            c_bluff = bluff_outcomes(store, cand_run.run_id, c_cfg, ood, t, failed["c"].get(c_cfg, set()))
            found.append((i, decision, b_bluff, c_bluff, paired_test(c_bluff, b_bluff, common=True)))
        mismatched = [note for note in bluff_notes.values() if "cannot serve both" in note]
        if not found and mismatched:
            raise ConfigError(f"--threshold-from-decision: {mismatched[0]}")
        if not found:
            raise ConfigError(
                f"--threshold-from-decision: the baseline run {base_run.name} {base_run.run_id} has no saved "
                f"threshold for {', '.join(b for b, *_ in raw)}; save one on the Threshold page first"
            )
        adj = holm_adjust([t.p_value for *_, t in found]) if holm else [t.p_value for *_, t in found]
        for (i, decision, b_bluff, c_bluff, test), p_adj in zip(found, adj, strict=True):
            more = test.wins > test.losses and p_adj < alpha
            broken, claim_note = claim_check(
                store, cand_run.run_id, raw[i][1], float(decision["threshold"]), decision.get("claim")
            )
            bluff_checks[i] = BluffCheck(
                threshold=float(decision["threshold"]),
                decision_id=str(decision["decision_id"]),
                note=str(decision["note"] or ""),
                baseline_bluffs=sum(b_bluff.values()),
                candidate_bluffs=sum(c_bluff.values()),
                out_domain=len(ood),
                new=test.wins,
                fixed=test.losses,
                p_value=test.p_value,
                p_adjusted=p_adj,
                failed=more or broken,
                new_queries=tuple((q, ood[q]) for q in test.won),
                more_bluffs=more,
                claim_failed=broken,
                claim_note=claim_note,
            )
        if base_run.model != cand_run.model:
            notes.append(
                f"the runs embed with different models ({base_run.model} / "
                f"{cand_run.model}): the baseline's threshold is applied to the "
                "candidate's distances as they are"
            )

    notes += _recipe_changes(base_run, cand_run, pairs)

    ground_truth = versions_note(base_run, cand_run)
    if ground_truth is not None:
        notes.append(ground_truth)
    results = []
    detectable = detectable_difference(n, alpha=level)
    for i, ((b_cfg, c_cfg, b_hits, c_hits, test), p_adj) in enumerate(zip(raw, p_adjusted, strict=True)):
        sides = []
        paired = len(b_hits)  # n, less the queries a side could not answer
        for run, cfg, hits in ((base_run, b_cfg, b_hits), (cand_run, c_cfg, c_hits)):
            s = sum(hits.values())
            low, high = wilson_interval(s, paired)
            sides.append(Side(run.run_id, run.name, cfg, s, paired, low, high))
        worse_by = (sides[0].successes - sides[1].successes) / paired
        ids = ranks["b"][b_cfg], ranks["c"][c_cfg]
        results.append(
            ConfigResult(
                baseline=sides[0],
                candidate=sides[1],
                wins=test.wins,
                losses=test.losses,
                ties=test.ties,
                p_value=test.p_value,
                p_adjusted=p_adj,
                alpha=alpha,
                regressed=test.losses > test.wins and p_adj < alpha,
                below_floor=min_effect is not None and worse_by >= min_effect - 1e-12,
                detectable=detectable,
                lost=_changes(test.lost, texts, *ids),
                won=_changes(test.won, texts, *ids),
                bluffs=bluff_checks.get(i),
                bluff_note=bluff_notes.get(i),
            )
        )
    statement = sample_statement(n, alpha=level)
    if holm and m > 1:
        statement += (
            f" (alpha {level:.2g} = {alpha:g} / {m}: the level the first Holm step needs over {m} configurations)"
        )
    return GateReport(
        metric=parsed.name,
        k=k,
        alpha=alpha,
        holm=holm,
        min_effect=min_effect,
        threshold_from_decision=threshold_from_decision,
        baseline_run=_run_summary(base_run),
        candidate_run=_run_summary(cand_run),
        n=n,
        results=tuple(results),
        statement=statement,
        smallest_flag=smallest_flag(n, level),
        notes=tuple(notes),
    )


def _recipe_changes(base_run: Run, cand_run: Run, pairs: list[tuple[str, str]]) -> list[str]:
    """A note for each compared strategy whose recipe (or model) differs between the runs, so a
    reader sees what the candidate changed: ``strategy G: boundaries+header (512 chars) ->
    blind (40 chars)``."""

    def recipes(run: Run) -> dict[str, str]:
        return {name: str(spec.get("describe", "")) for name, spec in (run.settings.get("strategies") or {}).items()}

    before, after = recipes(base_run), recipes(cand_run)
    notes = []
    for b_strategy, c_strategy in dict.fromkeys((b.split("/")[0], c.split("/")[0]) for b, c in pairs):
        old, new = before.get(b_strategy), after.get(c_strategy)
        if old and new and old != new:
            name = b_strategy if b_strategy == c_strategy else f"{b_strategy} -> {c_strategy}"
            notes.append(f"strategy {name}: {old} -> {new}")
    if base_run.model != cand_run.model:
        notes.append(
            f"{model_label(base_run.model, base_run.settings)} -> {model_label(cand_run.model, cand_run.settings)}"
        )
    return notes


def smallest_flag(n: int, level: float) -> int | None:
    """The fewest losses (with no win) the sign test flags at ``level``: the smallest L <= n with
    ``sign_test(0, L) < level`` (p = 2 * 0.5^L); None when even n losses are not enough. A drop
    of fewer than L of the n queries can never fail the gate on significance."""
    return next((losses for losses in range(1, n + 1) if sign_test(0, losses) < level), None)


def _run_summary(run: Run) -> dict[str, Any]:
    created = run.created_at
    return {
        "run_id": run.run_id,
        "name": run.name,
        "model": run.model,
        "created_at": created.isoformat(sep=" ", timespec="seconds") if isinstance(created, datetime) else str(created),
    }
