"""The embedder of the deployment check's tests (``EVALCORE_TEST_EMBEDDER=traffic.words:embedder``):
the keyword embedder of tests/keyword_embedder.py on words of the mini corpus, its questions
and the gate's off-topic queries, so that gate values spread over many distances (the
reliability suite's eight keywords leave nearly every query at distance 0)."""

from __future__ import annotations

from keyword_embedder import KeywordEmbedder

WORDS = (
    "server kettle device devices recipe recipes file database steeping install installing port network "
    "configuration config upgrade toml token tokens certificate pairing link fahrenheit degrees temperature "
    "error offline seconds revision owner locked http brew water household discovery broadcast linux folder "
    "sync default data time older newer"
).split()


def embedder() -> KeywordEmbedder:
    return KeywordEmbedder(WORDS)
