"""Embedding on a Ray cluster: Ray Data batch inference, one model per worker.

``python -m evalcore run ... --ray ADDRESS`` (``ray://head:10001``, ``auto`` inside a
cluster) or ``--ray local`` (a Ray runtime on this machine). Texts go out as a Ray
dataset; a pool of actors, each holding one copy of the model (loaded once per actor with
:func:`evalcore.embedding.embedder.load_embedder`: ONNX Runtime on CPU workers, torch with
``--device cuda`` on GPU workers), embeds batches; the driver puts the vectors back in
order. Everything else (chunking, the store's vector cache, retrieval, scoring) stays on
the driver, so vectors are cached under the same model name and text hash as local ones.

Every worker needs evalcore and the model: the packaged model is found in each worker's
own environment; a ``--model PATH`` folder must exist at that path on every node.

Before Ray is asked to join a cluster, :func:`check_address` makes sure one answers there:
Ray itself retries an address that nobody serves for minutes, printing its own log lines.
The address is parsed (``HOST:PORT``, ``ray://HOST[:PORT]``, ``auto``: ``$RAY_ADDRESS`` or
the cluster that ``ray start`` recorded on this machine), its host resolved and its port
connected to within ``CONNECT_TIMEOUT_S`` seconds; otherwise one line names the address
and why.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from evalcore.embedding.embedder import load_embedder
from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

    from evalcore.embedding.embedder import Embedder

log = logging.getLogger(__name__)

BATCH_TEXTS = 256  # texts per Ray Data batch (each worker length-sorts within it)
CONNECT_TIMEOUT_S = 10.0  # how long a cluster's address may take to answer before the run fails
CLIENT_PORT = 10001  # Ray Client's port when a ray:// address names none
ADDRESSES = "local, auto, HOST:PORT (a cluster's head) or ray://HOST[:PORT]"


def _endpoint(address: str) -> tuple[str, int]:
    """``(host, port)`` of a cluster address; ModelError naming it when it is not one."""
    bad = ModelError(f"--ray {address!r}: not a Ray address (give {ADDRESSES})")
    if address.startswith("ray://"):
        try:
            parts = urlsplit(address)
            host, port = parts.hostname, parts.port or CLIENT_PORT
        except ValueError:
            raise bad from None
    else:
        host, sep, number = address.rpartition(":")
        if not sep or not number.isdigit():
            raise bad
        port = int(number)
    if not host or not 0 < port < 65536:
        raise bad
    return host.strip("[]"), port


def _auto_address() -> str:
    """The cluster ``auto`` means: ``$RAY_ADDRESS``, else the one ``ray start`` recorded here."""
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named and named != "auto":
        return named
    recorded = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    try:
        found = recorded.read_text(encoding="utf-8").strip()
    except OSError:
        found = ""
    if not found:
        raise ModelError(
            "--ray auto: no Ray cluster runs on this machine (no RAY_ADDRESS, none recorded by "
            "`ray start`); start one with `ray start --head`, or use --ray local"
        )
    return found


def check_address(address: str | None, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """ModelError, within ``timeout`` seconds, unless ``address`` is ``local`` or a cluster
    answers there (its host resolves and its port accepts a connection)."""
    given = "" if address is None else address.strip()
    if given == "local":
        return
    if not given:
        raise ModelError(f"--ray '': give an address ({ADDRESSES})")
    target = _auto_address() if given == "auto" else given
    host, port = _endpoint(target)
    failure: list[str] = ["no answer"]

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                failure.clear()
        except socket.gaierror as exc:
            failure[0] = f"the host {host} is not known ({exc.strerror})"
        except OSError as exc:
            failure[0] = exc.strerror or type(exc).__name__

    worker = threading.Thread(target=attempt, daemon=True)  # a name lookup has no timeout of its own
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or failure:
        why = f"no answer within {timeout:g} s" if worker.is_alive() else failure[0]
        via = f" (auto: {target})" if given == "auto" else ""
        raise ModelError(f"--ray {given}{via}: no Ray cluster answers at {host}:{port}: {why}")


class _Encoder:
    """A Ray Data actor: loads the model once, then embeds batch after batch."""

    def __init__(self, model_path: str | None, device: str) -> None:

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
    check_address(address)
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
    """An :class:`evalcore.embedding.embedder.Embedder` whose ``encode`` runs on Ray workers.

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
