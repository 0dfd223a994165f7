"""The compiled row kernels (evalcore.retrieval.engine.kernels) against the numpy expressions they
replace, bit for bit; the batched word counting against a text-by-text count (the way BM25's
build counted before), on real corpora and on text made to break it; a block's answers the
same on one thread and on two."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from conftest import SHARED_DATA, shared_data

from evalcore.retrieval.bm25 import BM25, Analyzer
from evalcore.retrieval.engine import kernels
from evalcore.retrieval.engine.rank_rows import exact_similarities
from evalcore.retrieval.engine.wordcount import count_words
from evalcore.retrieval.ranking import rank_block


@pytest.mark.parametrize("dim", [1, 7, 8, 9, 100, 128, 129, 136, 255, 384, 385, 768, 1000, 1536, 4096, 8192])
def test_exact_sims_are_numpys_pairwise_sum(dim):
    rng = np.random.default_rng(dim)
    vectors = rng.standard_normal((300, dim)).astype(np.float32)
    q = rng.standard_normal(dim)
    ids = rng.integers(0, 300, 500)
    reference = (vectors[ids].astype(np.float64) * q).sum(axis=1)
    assert np.array_equal(kernels.exact_sims(q, vectors, ids), reference)
    assert np.array_equal(exact_similarities(q, vectors, ids), reference)


def test_exact_similarities_past_the_kernels_length_use_numpy():
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((20, kernels.PAIRWISE_MAX + 9)).astype(np.float32)
    q = rng.standard_normal(vectors.shape[1])
    ids = np.arange(20)
    assert np.array_equal(exact_similarities(q, vectors, ids), (vectors.astype(np.float64) * q).sum(axis=1))


def test_counting_kernels_equal_numpy():
    rng = np.random.default_rng(2)
    row = (rng.standard_normal(50_001) * 0.05).astype(np.float32)
    row[::97] = row[5]  # exact ties
    for threshold in (np.float64(0.1), np.float64(row[5]), np.float64(-1.0), np.float64(9.0)):
        assert np.array_equal(kernels.select_ge(row, threshold), np.flatnonzero(row >= threshold))
        assert kernels.count_above(row, threshold) == np.count_nonzero(row > threshold)
    for m in (1, 4, 5, 6, 40):  # a pass per band up to 5 bands, the grid of cells beyond
        lo = np.sort(rng.choice(row, m)).astype(np.float32)
        hi = (lo + np.float32(2e-4)).astype(np.float32)
        lo[0], hi[0] = row[5], row[5]  # a band that is one tied value
        above, at_least = kernels.band_counts(row, lo, hi)
        assert np.array_equal(above, [np.count_nonzero(row > h) for h in hi])
        assert np.array_equal(at_least, [np.count_nonzero(row >= x) for x in lo])
        above2, idx, owner = kernels.band_members(row, lo, hi)
        assert np.array_equal(above2, above)
        for j in range(m):
            assert np.array_equal(np.sort(idx[owner == j]), np.flatnonzero((row >= lo[j]) & (row <= hi[j])))
    scores = np.where(rng.random(30_000) < 0.3, 0.0, rng.integers(1, 6, 30_000) / 4.0)  # many ties
    s = np.append(scores[rng.integers(0, 30_000, 12)], 0.0)
    x = rng.integers(0, 30_000, 13)
    want = [np.count_nonzero(scores > sj) + np.count_nonzero(scores[:xj] == sj) for sj, xj in zip(s, x, strict=True)]
    assert np.array_equal(kernels.score_beats(scores, s, x), want)


def test_levels_are_monotone_and_counted():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.standard_normal(20_000), [0.0, 0.0, 5.0]])
    lo, size = float(values.min()), 4096
    scale = (size - 1) / (float(values.max()) - lo)
    counts, keys = kernels.level_counts(values, lo, scale, size)
    assert np.array_equal(keys, kernels.levels_of(values, lo, scale, size))
    assert np.array_equal(counts, np.bincount(keys, minlength=size))
    order = np.argsort(values)
    assert (np.diff(keys[order].astype(np.int64)) >= 0).all()  # a larger value never has a lower level
    wanted = np.zeros(size, dtype=bool)
    wanted[[0, 17, 2048, size - 1]] = True
    idx, got = kernels.level_members(keys, wanted)
    assert np.array_equal(idx, np.flatnonzero(wanted[keys])) and np.array_equal(got, keys[idx])


def test_level_member_kernels_equal_numpy():
    """level_members and split_members (a dense rank's bands within their levels) against the
    numpy expressions, with ties and bands sharing levels."""
    rng = np.random.default_rng(4)
    row = (rng.standard_normal(40_000) * 0.05).astype(np.float32)
    row[::53] = row[7]  # exact ties
    lo_all, size = float(row.min()), 2048
    scale = (size - 1) / (float(row.max()) - lo_all)
    _, keys_all = kernels.level_counts(row, lo_all, scale, size)
    for m in (1, 3, 12):
        lo = np.sort(rng.choice(row, m)).astype(np.float32)
        hi = (lo + np.float32(3e-4)).astype(np.float32)
        lo[0], hi[0] = row[7], row[7]
        k_lo, k_hi = kernels.levels_of(lo, lo_all, scale, size), kernels.levels_of(hi, lo_all, scale, size)
        wanted = np.zeros(size, dtype=bool)
        for a, b in zip(k_lo, k_hi, strict=True):
            wanted[a : b + 1] = True
        idx, keys = kernels.level_members(keys_all, wanted)
        assert np.array_equal(idx, np.flatnonzero(wanted[keys_all])) and np.array_equal(keys, keys_all[idx])
        above, members, owner = kernels.split_members(row[idx], idx, keys, k_lo, k_hi, lo, hi)
        for j in range(m):
            in_levels = (keys_all >= k_lo[j]) & (keys_all <= k_hi[j])
            assert above[j] == np.count_nonzero(in_levels & (row > hi[j]))
            assert np.array_equal(members[owner == j], np.flatnonzero(in_levels & (row >= lo[j]) & (row <= hi[j])))


def test_bm25_rows_equal_the_sparse_product():
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(words, rng.integers(0, 40), p=None)) for _ in range(3000)]
    index = BM25.build(texts)
    queries = [" ".join(rng.choice(words, rng.integers(1, 9))) for _ in range(50)] + ["w1 w1 w1 w2", "absent"]
    sparse = np.asarray(index.match(queries).todense())
    for i, q in enumerate(queries):
        assert np.array_equal(index.row(q), sparse[i])


def test_the_word_table_is_res_word_class():
    """An analyzer's words are ``\\w+`` runs: the table the compiled pass reads says, for every
    code point, what Python's ``re`` says."""
    import re

    from evalcore.retrieval.engine.wordcount import _word_table

    table = _word_table()
    word = re.compile(r"\w")
    assert all(bool(word.fullmatch(chr(c))) == table[c] for c in range(0x110000))


def reference_count(texts, analyzer):
    """The count BM25's build made before it was batched: text by text, a Counter each."""
    vocab, terms, freqs, ptr, lengths = {}, [], [], [0], []
    for text in texts:
        toks = analyzer.words(text)
        counts = Counter(toks)
        for term in counts:
            vocab.setdefault(term, len(vocab))
        pairs = sorted((vocab[t], c) for t, c in counts.items())
        terms += [t for t, _ in pairs]
        freqs += [c for _, c in pairs]
        ptr.append(len(terms))
        lengths.append(len(toks))
    return vocab, terms, freqs, ptr, lengths


HOSTILE = [
    "",
    "\x00",
    "a\x00b\x00\x00c",
    "ΑΣ Σ ς ΣΑ",  # the final sigma: the one case rule that looks at neighbours
    "İstanbul KELVIN \u212a",  # lowering gives ASCII letters
    "e\u0301 é \u0301x",  # combining marks, composed by NFC
    "x\x00\u0301",  # a mark after a NUL
    "ǅ ß ﬁ Straße STRASSE",
    "١٢٣ ٤ ½ ² 𝟙",  # digits beyond ASCII
    "a" * 5000,
    "  \t\n ",
    "end with a letter\x00",
    "\ud800 lone surrogate",
]


def corpora():
    texts = list(HOSTILE)
    rng = np.random.default_rng(5)
    texts += ["".join(rng.choice(list("ab \x00éΣ\u0301İ1"), rng.integers(0, 30))) for _ in range(3000)]
    if SHARED_DATA.exists():
        for path in sorted(SHARED_DATA.glob("**/*.md")):
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        for name in ("xquad.en.json", "xquad.de.json"):
            data = json.loads((shared_data("xquad") / name).read_text(encoding="utf-8"))
            texts += [p["context"] for art in data["data"] for p in art["paragraphs"]]
    return texts


@pytest.mark.parametrize("analyzer", ["", "unicode", "german", "english"])
def test_batched_word_counts_equal_a_text_by_text_count(analyzer, monkeypatch):
    from evalcore.retrieval.engine import wordcount

    texts = corpora()
    monkeypatch.setattr(wordcount, "_BATCH_TEXTS", 97)  # many batches, words new in each
    vocab, terms, freqs, ptr, lengths = count_words(iter(texts), analyzer)
    want = reference_count(texts, Analyzer(analyzer))
    assert list(vocab.items()) == list(want[0].items())
    assert terms.tolist() == want[1] and freqs.tolist() == want[2]
    assert ptr.tolist() == want[3] and lengths.tolist() == want[4]


def test_word_numbering_grows_its_table_and_pool_exactly():
    """Thousands of distinct words grow every array of the vocabulary several times; words that
    are prefixes of each other and of equal length stay apart."""
    words = [f"w{i}" for i in range(70_000)] + ["w", "w1", "w10", "w100"]
    texts = [" ".join(words[i : i + 50]) for i in range(0, len(words), 50)] * 2
    vocab, terms, *_ = count_words(texts, "")
    assert list(vocab) == list(dict.fromkeys(w for t in texts for w in t.split()))
    assert len(terms) == 2 * len(words)


def test_a_blocks_answers_do_not_depend_on_the_threads():
    rng = np.random.default_rng(6)
    n, d = 20_000, 16
    c = rng.standard_normal((n, d)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    c[1::7] = c[::7][: len(c[1::7])]  # exact ties
    q = (c[rng.integers(0, n, 40)] + rng.normal(scale=0.3, size=(40, d))).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    vocab = "a b c d e f g h".split()
    texts = [" ".join(rng.choice(vocab, rng.integers(0, 6))) for _ in range(n)]
    qtexts = [" ".join(rng.choice(vocab, 3)) for _ in range(40)]
    correct = [np.unique(rng.integers(0, n, rng.integers(0, 3))) for _ in range(40)]
    index = BM25.build(texts)
    args = (q, c, correct, ["dense", "bm25", "hybrid"], 20)
    one = rank_block(*args, bm25=index, qtexts=qtexts, threads=1)
    two = rank_block(*args, bm25=index, qtexts=qtexts, threads=2)
    for name in one:
        for field in ("top_ids", "top_dist", "top_score", "first", "answer", "answer_dist"):
            assert np.array_equal(getattr(one[name], field), getattr(two[name], field), equal_nan=True), (name, field)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1 2", "\u00b2", "x\x1b[31m"])
def test_a_bad_thread_count_stops_the_run_before_anything_is_stored(tmp_path, value):
    from conftest import MINI_ARGS, cli_in_process

    store = tmp_path / "s.duckdb"
    argv = ["--store", str(store), "run", *MINI_ARGS, "--strategies", "E", "--retrievers", "dense", "-q"]
    ran = cli_in_process(argv, env={"EVALCORE_THREADS": value})
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        f"error: EVALCORE_THREADS must be a positive whole number, got {value!r}"
    ]
    assert not store.exists()


def test_screening_with_torch_gives_the_same_answers():
    """``--device cuda`` makes a block's float32 scores with torch on the GPU; the decisions stay
    exact on the CPU. Run here on torch's CPU device (no GPU on the test machines), the path is
    the same but for where the product runs: every answer equals numpy's screening."""
    pytest.importorskip("torch")
    from evalcore.retrieval.dense import TorchScreen

    rng = np.random.default_rng(7)
    n, d = 5_000, 32
    c = rng.standard_normal((n, d)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    q = (c[rng.integers(0, n, 30)] + rng.normal(scale=0.5, size=(30, d))).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(list("abcdefgh"), rng.integers(0, 6))) for _ in range(n)]
    qtexts = [" ".join(rng.choice(list("abcdefgh"), 3)) for _ in range(30)]
    correct = [np.unique(rng.integers(0, n, rng.integers(0, 3))) for _ in range(30)]
    index = BM25.build(texts)
    args = (q, c, correct, ["dense", "bm25", "hybrid"], 20)
    plain = rank_block(*args, bm25=index, qtexts=qtexts)
    torch_screen = TorchScreen(c, "cpu")
    assert torch_screen(q, c).dtype == np.float32
    moved = rank_block(*args, bm25=index, qtexts=qtexts, screening=torch_screen)
    for name in plain:
        for field in ("top_ids", "top_dist", "top_score", "first", "answer", "answer_dist"):
            assert np.array_equal(getattr(plain[name], field), getattr(moved[name], field), equal_nan=True), (
                name,
                field,
            )
