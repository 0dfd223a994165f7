"""Embedding on a Ray cluster: Ray Data batch inference, one model per worker.

``python -m evalcore run ... --ray ADDRESS`` (``ray://head:10001``, ``auto`` inside a
cluster) or ``--ray local`` (a Ray runtime on this machine). Texts go out as a Ray
dataset; a pool of actors, each holding one copy of the model (loaded once per actor with
:func:`evalcore.pipeline.embedding.load_embedder`: ONNX Runtime on CPU workers, torch with
``--device cuda`` on GPU workers), embeds batches; the driver puts the vectors back in
order. Everything else (chunking, the store's vector cache, retrieval, scoring) stays on
the driver, so vectors are cached under the same model name and text hash as local ones.

Every worker needs evalcore and the model: the packaged model is found in each worker's
own environment; a ``--model PATH`` folder must exist at that path on every node.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

    from evalcore.pipeline.embedding import Embedder

log = logging.getLogger(__name__)

BATCH_TEXTS = 256  # texts per Ray Data batch (each worker length-sorts within it)


class _Encoder:
    """A Ray Data actor: loads the model once, then embeds batch after batch."""

    def __init__(self, model_path: str | None, device: str) -> None:
        from evalcore.pipeline.embedding import load_embedder

        self.embedder = load_embedder(model_path, device=device)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {"i": batch["i"], "vector": self.embedder.encode([str(t) for t in batch["text"]])}


def connect(address: str, num_cpus: int | None = None) -> None:
    """Join the cluster at ``address`` or start a local Ray runtime (``local``)."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        raise ModelError('--ray needs Ray, which is not installed: pip install "evalcore[ray]"') from exc
    if ray.is_initialized():
        return
    try:
        if address == "local":
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as exc:
        said = " ".join(str(exc).split())[:300]  # Ray's messages span lines: one line here
        raise ModelError(f"--ray {address!r}: cannot connect to Ray: {said}") from exc
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # evalcore shows its own progress
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)


@dataclass
class RayEmbedder:
    """An :class:`evalcore.pipeline.embedding.Embedder` whose ``encode`` runs on Ray workers.

    ``local`` is the same model loaded here: it gives the name, size and word-piece counts.
    """

    local: Embedder
    model_path: str | None
    device: str = "cpu"
    workers: int | None = None
    runtime: str = field(init=False, default="ray")

    @classmethod
    def start(
        cls,
        address: str,
        local: Embedder,
        device: str = "cpu",
        workers: int | None = None,
        model_path: str | None = None,
    ) -> RayEmbedder:
        connect(address)
        return cls(local=local, model_path=model_path, device=device, workers=workers)

    @property
    def name(self) -> str:
        return self.local.name

    @property
    def dim(self) -> int:
        return self.local.dim

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        return self.local.count_pieces(texts)

    def _pool_size(self) -> int:
        import ray

        if self.workers:
            return self.workers
        if self.device != "cpu":
            return max(1, int(ray.cluster_resources().get("GPU", 1)))  # type: ignore[no-untyped-call]  # ray leaves it unannotated
        # one model per node-sized share of the cluster's CPUs (a model uses every core it gets)
        return max(1, len([n for n in ray.nodes() if n.get("Alive")]))  # type: ignore[no-untyped-call]  # ray leaves it unannotated

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np
        import ray

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        pool = self._pool_size()
        if self.device == "cpu":
            resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]  # ray leaves it unannotated
            cpus = max(1.0, float(resources.get("CPU", 1)) / pool)
        else:
            cpus = 1.0
        ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
        out = ds.map_batches(
            _Encoder,
            fn_constructor_kwargs={"model_path": self.model_path, "device": self.device},
            batch_size=BATCH_TEXTS,
            batch_format="numpy",
            concurrency=pool,
            num_cpus=cpus,
            num_gpus=1 if self.device != "cpu" else 0,
        )
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows in out.iter_batches(batch_format="numpy", batch_size=None):
            # iter_batches is typed for every batch format; batch_format="numpy" yields dicts of arrays
            batch = cast("dict[str, np.ndarray]", rows)
            vectors[np.asarray(batch["i"], dtype=np.int64)] = np.stack(list(batch["vector"]))
        return vectors
