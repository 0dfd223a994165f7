"""The ONNX Runtime embedder against sentence-transformers' own encode (the reference),
the export cache, another model folder (--model PATH) and the fallback."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from subprocess import PIPE

import numpy as np
import pytest
from conftest import MINI

from evalcore.embedding import onnx_runtime
from evalcore.embedding.embedder import OnnxEmbedder, SentenceEmbedder, load_embedder


def texts_of_the_mini_corpus() -> list[str]:
    from evalcore.chunking import chunk_corpus, parse_strategies
    from evalcore.inputs.corpus import load_corpus

    corpus = load_corpus(MINI / "corpus")
    chunks = [c.text for s in parse_strategies("A,F") for c in chunk_corpus(corpus, s)]
    questions = [json.loads(line)["question"] for line in (MINI / "questions.jsonl").read_text().splitlines()]
    return chunks + questions + ["", " ", "word " * 700, "Ünïcödé ½ 東京 🙂"]


@pytest.fixture(scope="module")
def reference():
    from sentence_transformers import SentenceTransformer

    from evalcore.embedding.embedder import default_model_path

    return SentenceTransformer(str(default_model_path()), device="cpu")


@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_onnx_vectors_match_sentence_transformers(real_embedder, reference, backend):
    pytest.importorskip(backend)
    assert isinstance(real_embedder, OnnxEmbedder)
    emb = OnnxEmbedder.load(backend=backend)
    assert emb.runtime == backend
    texts = texts_of_the_mini_corpus()
    ours = emb.encode(texts)
    ref = reference.encode(texts, normalize_embeddings=True, batch_size=32)
    cos = np.sum(ours.astype(np.float64) * ref, axis=1)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    assert cos.min() >= 0.9999, cos.min()
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_word_pieces_match_the_transformers_tokenizer(real_embedder, reference):
    texts = texts_of_the_mini_corpus()
    expected = [len(ids) for ids in reference.tokenizer(texts, truncation=False)["input_ids"]]
    assert real_embedder.count_pieces(texts) == expected
    assert max(expected) > 256  # the untruncated count, over the model's window


def test_the_export_is_cached_by_folder_hash_and_not_redone(real_embedder, monkeypatch):
    from evalcore.embedding.embedder import default_model_path

    folder = onnx_runtime.export_dir(default_model_path())
    assert (folder / "model.onnx").exists() and folder.parent.parent == onnx_runtime.cache_root()

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_runtime, "export", no_export)
    assert OnnxEmbedder.load().dim == 384


def test_folder_digest_follows_the_contents(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "m"
    model.mkdir()
    (model / "a.json").write_text("1")
    first = onnx_runtime.folder_digest(model)
    assert onnx_runtime.folder_digest(model) == first  # remembered
    (model / "a.json").write_text("2")
    assert onnx_runtime.folder_digest(model) != first
    assert (tmp_path / "cache" / "digests").is_dir()


def test_cache_root_prefers_evalcore_cache_then_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "x"))
    assert onnx_runtime.cache_root() == tmp_path / "x"
    monkeypatch.delenv("EVALCORE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx_runtime.cache_root() == tmp_path / "xdg" / "evalcore"


@pytest.fixture(scope="module")
def tiny_sentence_model(tmp_path_factory):
    """A real sentence-transformers folder with random weights (tiny BERT, mean pooling)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    from evalcore.embedding.embedder import default_model_path

    bert = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    torch.manual_seed(1)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
        )
    ).save_pretrained(bert)
    tok.save_pretrained(bert)
    path = tmp_path_factory.mktemp("tiny-st")
    first = Transformer(str(bert), max_seq_length=64)
    SentenceTransformer(modules=[first, Pooling(32, "mean")]).save(str(path))
    return path


def test_another_model_folder_exports_and_matches(tiny_sentence_model, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))
    emb = load_embedder(tiny_sentence_model)
    assert isinstance(emb, OnnxEmbedder) and emb.dim == 32
    assert emb.name == str(tiny_sentence_model.resolve())
    texts = texts_of_the_mini_corpus()
    ref = SentenceTransformer(str(tiny_sentence_model), device="cpu").encode(texts, normalize_embeddings=True)
    cos = np.sum(emb.encode(texts).astype(np.float64) * ref, axis=1)
    assert cos.min() >= 0.9999
    assert list((tmp_path / "cache" / "onnx").iterdir())  # exported into $EVALCORE_CACHE


def test_runtime_torch_and_a_failed_export_use_sentence_transformers(tiny_sentence_model, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))
    assert isinstance(load_embedder(tiny_sentence_model, runtime="torch"), SentenceEmbedder)

    def broken(*args, **kwargs):
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(onnx_runtime, "export", broken)
    assert isinstance(load_embedder(tiny_sentence_model), SentenceEmbedder)


#: A process that loads a model folder's ONNX export (exporting it if needed) and prints the
#: vector of a probe text, with evalcore's log lines on stderr.
_LOAD = """import hashlib, logging, sys
logging.basicConfig(level=1, format="%(message)s")
from evalcore.embedding import onnx_runtime
model = onnx_runtime.load(sys.argv[1])
print(model.dim, hashlib.sha256(model.encode(["a probe text"]).tobytes()).hexdigest())
"""


def test_processes_that_need_one_export_at_once_make_it_once(tiny_sentence_model, tmp_path, monkeypatch):
    """Two processes start on an empty cache while the export's lock (the file beside the
    export) is held, as by a process exporting: neither exports meanwhile. Once it is free, one
    exports and the other waits for that export and loads it."""
    from conftest import ROOT

    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))
    dest = onnx_runtime.export_dir(tiny_sentence_model)
    dest.parent.mkdir(parents=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-c", _LOAD, str(tiny_sentence_model)]
    procs: list[subprocess.Popen] = []
    try:
        with open(dest.parent / f"{dest.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for _ in range(2):
                procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=PIPE, stderr=PIPE, text=True))
            time.sleep(3)  # both reach the lock (about a second after they start) and wait there
            assert [p.poll() for p in procs] == [None, None], [p.communicate() for p in procs]
            assert not dest.exists() and not list(dest.parent.glob(".export-*"))
        done = [p.communicate(timeout=120) for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in done]
    notes = [err.count("preparing the embedding model") for _, err in done]
    assert sorted(notes) == [0, 1], [err[-2000:] for _, err in done]  # one export, not one each
    assert done[0][0] == done[1][0] and done[0][0].startswith("32 ")  # the same vector from the one export
    assert [p.name for p in dest.parent.iterdir() if p.is_dir()] == [dest.name]


def test_cuda_without_a_gpu_is_a_clear_error():
    import torch

    from evalcore.errors import ModelError

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelError, match="no CUDA GPU"):
        load_embedder(device="cuda")


def test_a_plain_install_says_once_as_a_note_what_evalcore_fast_gains(
    tiny_sentence_model, tmp_path, monkeypatch, caplog
):
    """Without the fast path's modules (they really cannot be imported: None in sys.modules),
    the model runs in sentence-transformers after one NOTE line naming ``evalcore[fast]``; no
    warning, no failed export attempt; a second load says nothing more."""
    import logging

    from evalcore.embedding import embedder as embedding

    monkeypatch.setenv("EVALCORE_CACHE", str(tmp_path / "cache"))  # no cached export
    for name in ("openvino", "onnxruntime", "onnx", "onnxscript"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(embedding, "_FAST_NOTED", False)
    with caplog.at_level(logging.INFO, logger="evalcore"):
        assert isinstance(load_embedder(tiny_sentence_model), SentenceEmbedder)
        assert isinstance(load_embedder(tiny_sentence_model), SentenceEmbedder)
    records = [r for r in caplog.records if r.name.startswith("evalcore")]
    assert [r.levelname for r in records] == ["NOTE"], [r.getMessage() for r in records]
    message = records[0].getMessage()
    assert 'pip install "evalcore[fast]"' in message and "openvino or onnxruntime, onnx, onnxscript" in message
    assert not (tmp_path / "cache" / "onnx").exists()  # no export was attempted


def test_one_pass_embeds_what_separate_calls_do_reports_each_batch_and_stops_on_a_cancel(real_embedder, monkeypatch):
    """embed_with_cache hands every text to one pass (tokenised in a thread ahead of the
    model): vectors as text-by-text calls give them, progress per batch summing to the texts
    (duplicates counted), and an error raised by the progress (a cancel) ends the pass and
    its producer thread."""
    import threading

    from evalcore.embedding.vector_cache import embed_with_cache
    from evalcore.errors import RunInterrupted

    monkeypatch.setattr(onnx_runtime, "FIRST_WINDOW", 7)  # several windows, several batches
    monkeypatch.setattr(onnx_runtime, "WINDOW_TEXTS", 20)
    monkeypatch.setattr(real_embedder.onnx, "token_budget", 256)
    texts = texts_of_the_mini_corpus()[-60:]
    texts = texts + texts[:5]  # duplicates are embedded once, counted twice
    seen: list[int] = []
    vecs, stats = embed_with_cache(real_embedder, texts, None, on_progress=seen.append)
    one_by_one = np.vstack([real_embedder.encode([t]) for t in texts])
    assert stats.new == len(set(texts)) and sum(seen) == len(texts) and len(seen) > 3
    cos = np.sum(vecs.astype(np.float64) * one_by_one, axis=1)
    assert cos.min() >= 0.9999, cos.min()

    calls = []

    def cancel(n: int) -> None:
        calls.append(n)
        if len(calls) == 2:
            raise RunInterrupted("cancelled by the user")

    with pytest.raises(RunInterrupted):
        embed_with_cache(real_embedder, [t + " again" for t in texts], None, on_progress=cancel)
    assert len(calls) == 2
    assert not [t for t in threading.enumerate() if t.name == "evalcore-tokenise"]
