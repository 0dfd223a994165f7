"""The rerank retriever (METHODS.md "The words"): a local cross-encoder rescores the hybrid
top ``RERANK_DEPTH`` chunks; the rest keep their hybrid order."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import CrossEncoder

RERANK_DEPTH = 25


@dataclass
class Reranker:
    """A local sentence-transformers CrossEncoder; higher score = more relevant."""

    path: str
    model: CrossEncoder

    @classmethod
    def load(cls, path: str | Path) -> Reranker:

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        p = Path(path)
        if not p.is_dir():
            raise ModelError(f"{path}: no cross-encoder model folder there")
        from sentence_transformers import CrossEncoder

        try:
            model = CrossEncoder(str(p), device="cpu", local_files_only=True)
        except Exception as exc:
            raise ModelError(f"{path}: cannot load the cross-encoder: {exc}") from exc
        return cls(path=str(p), model=model)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        s = self.model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [float(x) for x in np.asarray(s, dtype=np.float64).reshape(-1)]


def rerank_order(hybrid_order: np.ndarray, scores: Sequence[float], depth: int = RERANK_DEPTH) -> np.ndarray:
    """The hybrid top ``depth`` re-sorted by cross-encoder score (ties: chunk id), then the rest."""
    import numpy as np

    head = np.asarray(hybrid_order[:depth])
    s = np.asarray(scores, dtype=np.float64)
    idx = np.lexsort((head, -s))
    return np.concatenate([head[idx], np.asarray(hybrid_order[depth:])])
