"""The dense retriever (METHODS.md "The words"): cosine distances between L2-normalised vectors,
and the float32 screening of a block of queries that exact rankings start from.

Dense scores are screened in float32 (one matrix product per block of queries, the only
large buffer) and decided in float64: a float32 dot product of ``d`` terms is within
``eps = (d + 4) * 2**-24 * |q| * max|c|`` of the exact one, so a chunk whose float32
similarity is more than ``eps`` away from another's is on the same side exactly, and only
chunks within that band are recomputed. The float64 similarity of a pair is always
computed the same way (:func:`evalcore.retrieval.engine.rank_rows.exact_similarities`: the
float64 products summed by numpy's pairwise sum), so a pair gets the same bits whichever
block or batch asks for it, and equal vectors tie exactly (then chunk order decides).
Distances are ``1 - sim`` in float64 and orders compare those distances, as the full sort did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_SLICE = 16384  # chunks multiplied at once: the product's output stays in the cache


def cosine_distances(queries: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """``1 - q . c`` for L2-normalised vectors; shape (queries, chunks), float64."""
    import numpy as np

    if queries.shape[1] != chunks.shape[1]:
        raise ModelError(
            f"query vectors have size {queries.shape[1]} and chunk vectors {chunks.shape[1]}: "
            "vectors of two models are never compared"
        )
    return 1.0 - (queries.astype(np.float64) @ chunks.astype(np.float64).T)


def screening_error(q: np.ndarray, max_norm: float) -> NDArray[np.float64]:
    """Bound on |float32 dot - exact dot| for each query row (see the module docstring)."""
    import numpy as np

    dim: int = q.shape[1]
    norms: NDArray[np.float64] = np.sqrt(np.einsum("ij,ij->i", q.astype(np.float64), q.astype(np.float64)))
    return 1.01 * (dim + 4) * 2.0**-24 * norms * max_norm + 1e-15


def max_norm(vectors: np.ndarray, block: int = 65536) -> float:
    """Largest L2 norm of the rows of ``vectors`` (read in blocks, no full copy)."""
    import numpy as np

    best = 0.0
    for i in range(0, len(vectors), block):
        part = np.asarray(vectors[i : i + block], dtype=np.float32)
        best = max(best, float(np.einsum("ij,ij->i", part, part, dtype=np.float64).max(initial=0.0)))
    return float(np.sqrt(best))


def screen_scores(q32: np.ndarray, cvec: np.ndarray, out: np.ndarray | None = None) -> NDArray[np.float32]:
    """``q32 @ cvec.T`` in float32, a slice of chunks at a time (the same error bound: each
    value is one float32 dot product), into ``out`` when given (its first rows)."""
    import numpy as np

    if out is None:
        out = np.empty((len(q32), len(cvec)), dtype=np.float32)
    else:
        out = out[: len(q32)]
    for a in range(0, len(cvec), _SLICE):
        b = min(len(cvec), a + _SLICE)
        np.matmul(q32, cvec[a:b].T, out=out[:, a:b])
    return out


class NumpyScreen:
    """:func:`screen_scores` into one buffer kept from block to block: a fresh gigabyte would cost the
    system's zeroed pages at every block (a fifth of the product's time at a million chunks).
    A block's scores are overwritten by the next block's."""

    def __init__(self) -> None:
        self.buffer: np.ndarray | None = None

    def __call__(self, q32: np.ndarray, cvec: np.ndarray) -> NDArray[np.float32]:
        import numpy as np

        b = self.buffer
        if b is None or b.shape[0] < len(q32) or b.shape[1] != len(cvec):
            b = self.buffer = np.empty((len(q32), len(cvec)), dtype=np.float32)
        return screen_scores(q32, cvec, b)


class TorchScreen:
    """The screening's matrix products on a torch device (a CUDA GPU): the chunk vectors are
    copied there once, each block's float32 scores come back. TF32 is off, so each score is a
    float32 dot product of the 384 products, whatever order the GPU sums them in: within the
    same bound ``eps`` as on the CPU, and every decision is then made in float64 on the CPU as
    before, so the figures are the same."""

    def __init__(self, cvec: np.ndarray, device: str) -> None:
        import numpy as np
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.chunks = torch.from_numpy(np.ascontiguousarray(cvec, dtype=np.float32)).to(self.device)

    def __call__(self, q32: np.ndarray, cvec: np.ndarray) -> NDArray[np.float32]:
        import numpy as np

        torch = self.torch
        with torch.no_grad():
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = False
            try:
                q = torch.from_numpy(np.ascontiguousarray(q32)).to(self.device)
                out: NDArray[np.float32] = (q @ self.chunks.T).cpu().numpy()
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
        return out


def screener(cvec: np.ndarray, device: str = "cpu") -> Callable[[np.ndarray, np.ndarray], NDArray[np.float32]]:
    """How the blocks' float32 scores are made: :class:`NumpyScreen` on the CPU, or
    :class:`TorchScreen` on ``device`` (``cuda``, ``cuda:1``)."""
    if device == "cpu":
        return NumpyScreen()
    return TorchScreen(cvec, device)
