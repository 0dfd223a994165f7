"""The keyword embedder: a tiny fake embedder for tests where the model is not what is tested.

A module of its own (numpy only), so that a ``python -m evalcore`` process started by a test
with ``EVALCORE_TEST_EMBEDDER`` imports it without pytest and the suite's fixtures."""

from __future__ import annotations

import re

import numpy as np


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
