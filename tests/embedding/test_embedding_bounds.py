"""Bounded memory on pathological texts: word pieces counted a segment at a time and the
embedder fed only the head the model reads, with counts and vectors equal to the
tokenizer's and the model's on the whole text (the real tokenizer and model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.embedding.long_texts import segments, window_head

# characters that stress BERT's normaliser and pre-tokeniser: accents and combining marks,
# CJK, punctuation, control characters, odd whitespace, emoji
ALPHABET = "ab  \n\ttÉé\u0301\u0300ñ中文字.,;!?-'\"()\x00\x01\x1c\x7f\u00a0\u2003\u3000\ufeff😀ß" + "xyz" * 3


@pytest.fixture(scope="module")
def tokenizer():
    """The model folder's tokenizer read by transformers (an independent reader)."""
    from transformers import AutoTokenizer

    from evalcore.embedding.embedder import default_model_path

    return AutoTokenizer.from_pretrained(str(default_model_path()))


@pytest.fixture(scope="module", params=["exported", "sentence-transformers"])
def embedder(request, real_embedder):
    """Both runtimes the product uses: the exported model and sentence-transformers (torch)."""
    from evalcore.embedding.embedder import SentenceEmbedder

    return real_embedder if request.param == "exported" else SentenceEmbedder.load()


def plain(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=400), size=st.integers(min_value=1, max_value=40))
def test_segment_counts_add_up_to_the_whole_texts_count(tokenizer, text, size):
    parts = list(segments(text, size))
    assert "".join(parts) == text
    assert sum(plain(tokenizer, p) for p in parts) == plain(tokenizer, text)


def test_count_pieces_of_a_long_text_equals_the_tokenizer_on_the_whole_text(embedder, tokenizer):
    rng = np.random.default_rng(3)
    words = [
        "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyzé中"), size=rng.integers(1, 14))) for _ in range(40_000)
    ]
    text = " ".join(words) + "\n" + "\n".join(words[:5000])  # ~300,000 characters: three segments
    assert len(text) > 2 * 100_000
    whole = len(tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
    assert embedder.count_pieces(["short text", text]) == [4, whole]


def test_the_window_head_gives_the_model_the_same_input_and_vector(embedder, tokenizer):
    rng = np.random.default_rng(4)
    text = " ".join("".join(rng.choice(list("abcdefghijklmnop"), size=rng.integers(2, 9))) for _ in range(20_000))
    room = embedder.window - 2
    head = window_head(text, lambda t: plain(tokenizer, t), room)
    assert len(head) < len(text) // 10 and text.startswith(head)

    def model_input(t):
        return tokenizer(t, truncation=True, max_length=embedder.window)["input_ids"]

    assert model_input(head) == model_input(text)
    from evalcore.embedding.embedder import SentenceEmbedder

    ours = embedder.encode([text])[0]
    # sentence-transformers on the whole text: the model's own truncation
    theirs = SentenceEmbedder.load().model.encode([text], normalize_embeddings=True)[0]
    assert float(ours @ theirs) > 0.9999999 and np.abs(ours - theirs).max() < 1e-5
