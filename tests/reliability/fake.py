"""The embedder of the reliability suite's processes where the model is not what is tested
(``EVALCORE_TEST_EMBEDDER=fake:embedder``): the keyword embedder of tests/conftest.py,
which imports no torch, so a process starts in a second."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from keyword_embedder import KeywordEmbedder

KEYWORDS = ["install", "cache", "token", "password", "recipe", "error", "python", "pip"]


def embedder() -> KeywordEmbedder:
    return KeywordEmbedder(KEYWORDS)
