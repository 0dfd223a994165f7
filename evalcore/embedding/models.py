"""Several embedding models in one built-in run: one stored strategy per (chunker, model).

With one model a strategy keeps its name (``E``). With several, strategy ``E`` under the
model in folder ``.../bge-small-en-v1.5`` is stored as ``E@bge-small-en-v1.5``, so the
tables keep their keys (run, strategy, retriever), a configuration reads strategy x model x
retriever (``E@bge-small-en-v1.5/dense``), and two models compare paired on the same
queries like two strategies. Each stored strategy records its chunker and its model
(``strategies.chunker``, ``strategies.model``, ``configurations.model``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.errors import ConfigError
from evalcore.records import Strategy

if TYPE_CHECKING:
    from evalcore.embedding.embedder import Embedder

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


@dataclass(frozen=True, slots=True)
class Planned:
    """One stored strategy: the strategy (named as stored), its chunker's name, its model."""

    strategy: Strategy
    chunker: str
    embedder: Embedder


def short_name(model: str) -> str:
    """The label of a model in strategy names: the last part of its name or folder
    (``sentence-transformers/all-MiniLM-L6-v2`` -> ``all-MiniLM-L6-v2``)."""
    return _UNSAFE.sub("-", Path(str(model).rstrip("/\\")).name).strip("-") or "model"


def plan(strategies: Sequence[Strategy], embedders: Sequence[Embedder]) -> list[Planned]:
    """Every strategy under every model, in that order; names as the module docstring says.
    ConfigError when two models would get the same label or the same model is given twice."""
    if not embedders:
        raise ConfigError("no embedding model given")
    if len(embedders) == 1:
        return [Planned(s, s.name, embedders[0]) for s in strategies]
    names = [e.name for e in embedders]
    if len(set(names)) != len(names):
        raise ConfigError(f"--model: the same model given twice ({', '.join(names)})")
    labels = [short_name(n) for n in names]
    if len(set(labels)) != len(labels):
        raise ConfigError(
            f"--model: two model folders share the name {labels!r}; strategies are named "
            "STRATEGY@FOLDER, so give folders distinct names"
        )
    return [
        Planned(dataclasses.replace(s, name=f"{s.name}@{label}"), s.name, e)
        for e, label in zip(embedders, labels, strict=True)
        for s in strategies
    ]
