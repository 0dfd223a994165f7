"""Several embedding models in one built-in run: strategy x model x retriever, paired."""

from __future__ import annotations

import pytest

from evalcore.read.summary import summary_table
from evalcore.store import Store


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A real sentence-transformers folder: a one-layer BERT with random weights (seed 0), the
    MiniLM tokenizer, mean pooling and normalisation; vectors of 32 dimensions."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    from evalcore.embedding.embedder import default_model_path

    raw = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
        )
    ).save_pretrained(raw)
    tok.save_pretrained(raw)
    body = Transformer(str(raw), max_seq_length=256)
    folder = tmp_path_factory.mktemp("models") / "tiny-random"
    SentenceTransformer(modules=[body, Pooling(32, "mean"), Normalize()], device="cpu").save(str(folder))
    return folder


@pytest.mark.slow
def test_two_models_are_two_stored_strategies_compared_paired(
    tmp_path, mini_inputs, tiny_model, engine_store, engine_run_id, capsys
):
    from conftest import MINI_ARGS

    from evalcore.cli import main
    from evalcore.embedding.embedder import default_model_path

    store = tmp_path / "s.duckdb"
    args = [
        "--store",
        str(store),
        "run",
        *MINI_ARGS,
        "--strategies",
        "E",
        "--retrievers",
        "dense,bm25",
        "--model",
        str(default_model_path()),
        "--model",
        str(tiny_model),
        "--name",
        "two",
        "--quiet",
        "--json",
    ]
    assert main(args) == 0
    import json

    first = json.loads(capsys.readouterr().out)
    configs = [f"{c['strategy']}/{c['retriever']}" for c in first["configurations"]]
    mini = "E@all-MiniLM-L6-v2"
    assert configs == [f"{mini}/dense", f"{mini}/bm25", "E@tiny-random/dense", "E@tiny-random/bm25"]
    s = Store(store)
    run_id = first["run_id"]
    rows = s.query("SELECT strategy, chunker, model FROM strategies WHERE run_id = ? ORDER BY strategy", [run_id])
    assert rows["chunker"].tolist() == ["E", "E"]
    # the packaged model's folder reads as the packaged model: one name, one cache
    assert rows["model"].tolist() == ["sentence-transformers/all-MiniLM-L6-v2", str(tiny_model.resolve())]
    assert {c["model"] for c in first["configurations"]} == set(rows["model"])
    # the packaged model under its folder path ranks exactly as in the engine's run (same vectors)
    ours = summary_table(s, run_id).set_index("config")
    engine = summary_table(Store(engine_store), engine_run_id).set_index("config")
    for metric in ("recall@1", "recall@4", "recall@20", "mrr"):
        assert ours.loc[f"{mini}/dense", metric] == engine.loc["E/dense", metric]
        assert ours.loc[f"{mini}/bm25", metric] == engine.loc["E/bm25", metric]  # bm25 ignores the model
    # two models, paired on the same queries like two strategies
    from evalcore.read.compare import compare
    from evalcore.records import Configuration, RunConfiguration

    sides = [RunConfiguration(run_id, Configuration.parse(c)) for c in (f"{mini}/dense", "E@tiny-random/dense")]
    matrix = compare(s, sides, 4).matrix
    assert set(matrix["n"]) == {int(ours.loc[f"{mini}/dense", "queries"])}
    # vectors are cached per model: a second run embeds nothing new
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["new_embeddings"] == 0 and second["cached_embeddings"] > 0
    cached = s.query("SELECT model, count(*) AS n FROM embeddings GROUP BY model ORDER BY model")
    assert cached["model"].tolist() == sorted(rows["model"])
