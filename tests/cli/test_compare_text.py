"""``python -m evalcore compare``: figures against oracles, and fitted to 80-120 columns."""

from __future__ import annotations

from itertools import combinations

import pytest
from regression.test_gate import CONFIGS, hits
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalcore.cli import main


def compare(store, *args, capsys):
    code = main(["--store", str(store), "compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def matrix(out: str, labels: list[str]) -> dict[tuple[str, str], str]:
    """{(row, column): cell} read back from the printed matrix blocks."""
    cells: dict[tuple[str, str], str] = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        parts = line.split()
        if (
            parts
            and all(p.isdigit() for p in parts)
            and i + 1 < len(lines)
            and lines[i + 1].split()[:2] == ["1", labels[0]]
        ):
            columns = [labels[int(p) - 1] for p in parts]
            for row_line in lines[i + 1 : i + 1 + len(labels)]:
                idx, label, *values = row_line.split()
                assert label == labels[int(idx) - 1]
                cells.update({(label, c): v for c, v in zip(columns, values, strict=True)})
    return cells


def sign(a: dict[str, bool], b: dict[str, bool]) -> tuple[int, int, float]:
    w = sum(a[q] and not b[q] for q in a)
    n_lost = sum(b[q] and not a[q] for q in a)
    return w, n_lost, (binomtest(w, w + n_lost, 0.5).pvalue if w + n_lost else 1.0)


@pytest.mark.parametrize("width", [80, 100, 120])
def test_fits_the_width_and_never_cuts_a_name(gate_store, capsys, width):
    code, out, _ = compare(gate_store, "base", "--width", str(width), capsys=capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= width
    table = [line.split()[0] for line in out.splitlines() if line.split()[:1] and line.split()[0] in CONFIGS]
    assert table == CONFIGS  # the per-configuration table, names whole
    cells = matrix(out, CONFIGS)
    assert len(cells) == 21 * 21  # every cell, whatever the number of blocks
    assert ("R@1 [95% Wilson]" in out) == (width >= 120)


def test_table_and_matrix_against_oracles(gate_store, capsys):
    code, out, _ = compare(gate_store, "base", "--width", "120", capsys=capsys)
    outcome = {c: hits(gate_store, "base", c) for c in CONFIGS}
    n = len(outcome["P/hybrid"])
    for c in ("A/dense", "P/hybrid"):
        line = next(x for x in out.splitlines() if x.startswith(c + " "))
        s = sum(outcome[c].values())
        lo, hi = proportion_confint(s, n, alpha=0.05, method="wilson")
        assert f"{s / n:.3f} [{lo:.3f},{hi:.3f}]" in line
    cells = matrix(out, CONFIGS)
    for r, c in [("P/hybrid", "A/hybrid"), ("A/dense", "P/dense"), ("E/bm25", "E/dense")]:
        w, n_lost, p = sign(outcome[r], outcome[c])
        expected = (f"{w - n_lost:+d}" if w != n_lost else "0") + ("*" if p < 0.05 else "")
        assert cells[(r, c)] == expected


def test_holm_lists_exactly_the_pairs_statsmodels_finds(gate_store, capsys):
    code, out, _ = compare(gate_store, "base", "--holm", "--width", "100", capsys=capsys)
    outcome = {c: hits(gate_store, "base", c) for c in CONFIGS}
    pairs = list(combinations(CONFIGS, 2))
    tests = [sign(outcome[a], outcome[b]) for a, b in pairs]
    reject, adjusted, *_ = multipletests([t[2] for t in tests], alpha=0.05, method="holm")
    expected = set()
    for (a, b), (w, n_lost, _), rej in zip(pairs, tests, reject, strict=True):
        if rej:
            expected.add((a, b) if w > n_lost else (b, a))
    listed = {
        (x.split()[0], x.split()[2])
        for x in out.split("Holm-adjusted over 210 pairs):")[-1].splitlines()
        if " beats " in x
    }
    assert listed == expected
    assert "Holm-adjusted over 210 pairs" in out


def test_two_runs_on_the_same_queries(gate_store, capsys):
    code, out, _ = compare(gate_store, "base", "cand", "--width", "120", capsys=capsys)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 120
    labels = [f"r1:{c}" for c in CONFIGS] + [f"r2:{c}" for c in CONFIGS]
    cells = matrix(out, labels)
    w, n_lost, p = sign(hits(gate_store, "base", "P/hybrid"), hits(gate_store, "cand", "P/hybrid"))
    assert cells[("r1:P/hybrid", "r2:P/hybrid")] == f"{w - n_lost:+d}" + ("*" if p < 0.05 else "")
    assert cells[("r1:A/dense", "r2:A/dense")] == "0"
    assert "r1: run base " in out and "r2: run cand " in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["base", "fewer"], "did not answer the same queries"),
        (["base", "--metric", "mrr"], "mrr has no such outcome"),
        (["nope"], "no run with id or name 'nope'"),
    ],
)
def test_bad_input_exit_2(gate_store, capsys, args, message):
    code, out, err = compare(gate_store, *args, capsys=capsys)
    assert code == 2 and message in err and err.count("\n") == 1
