"""What one run is: :class:`RunSpec`, frozen, with every default of a run defined once here.

A run measures one of three retrievers on one set of inputs:

- the built-in pipeline (``strategies`` x ``models`` x ``retrievers``; the default);
- a live search service over HTTP (``endpoint``: an :class:`~evalcore.external.endpoint.Endpoint`);
- a retriever written in Python (``function``: ``fn(query, k)`` -> hits, see evalcore.run.evaluate).

Its inputs are the built-in demo (``demo=True``), or a corpus folder with ``questions`` (and
``ood``), or a corpus folder with a question set of the store (``dataset``: ``NAME[@VERSION]``).
A dashboard user's spec is bounded by what the operator allowed, checked again in the job's
process: ``confined`` reads model folders only inside the operator's data roots
(evalcore.inputs.sources) and sends queries only to an endpoint under the operator's prefixes
(``$EVALCORE_ENDPOINTS``); ``server_paths`` reads the corpus and question files only inside
the data roots too (a folder typed on the New run screen; an upload's saved files are not).

:func:`evalcore.run.execute.execute` makes the run; the CLI, the job worker, the New run
screen (through a job) and :func:`evalcore.evaluate` all build a RunSpec for it.
:meth:`RunSpec.to_json` / :meth:`RunSpec.from_json` carry a spec to a job's process (a Python
function or a loaded corpus cannot travel; header values are never written).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import check_run_name
from evalcore.chunking import DEFAULT_STRATEGIES, parse_strategies
from evalcore.configurations import EXTERNAL, score_kind
from evalcore.errors import ConfigError
from evalcore.external.endpoint import check_allowed, from_spec
from evalcore.external.importer import check_label
from evalcore.external.record import DEFAULT_MAX_FAILURES
from evalcore.inputs.question_sets import parse_question_set_ref
from evalcore.retrieval.names import parse_retrievers

if TYPE_CHECKING:
    from evalcore.external.endpoint import Endpoint
    from evalcore.records import Corpus, Strategy

DEFAULT_RETRIEVERS = "dense,bm25,hybrid"  # what a run compares when it is not told (the demo adds rerank)
DEFAULT_DEVICE = "cpu"
DEFAULT_K = 20  # hits asked of a Python retriever per query (an endpoint's own k is Endpoint.k)
SIMILARITY = "similarity"  # how an external retriever's scores read unless told (higher = closer)
PYTHON = "python"  # the name of a run of a Python retriever unless told
#: The most shards a run may ask for: each is a Ray actor (a process of its own, some 150 MB
#: before its chunks). A run uses at most two per CPU of the cluster (at least 4) and one per chunk.
MAX_SHARDS = 256


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run: its inputs, what is measured, and its name (see the module docstring).

    Built-in pipeline: ``strategies`` (A-G or recipes) and ``retrievers``, each a tuple of names
    (a comma list, as the CLI takes them, is read into one when the spec is built; a built-in
    run's strategies are parsed then too: :attr:`parsed_strategies`),
    ``models`` (model folders; empty: the packaged all-MiniLM-L6-v2; several: each strategy under
    each, stored as ``STRATEGY@MODEL``), ``device``, ``ray`` (a Ray address to embed and retrieve on:
    the chunks of a strategy are then split into ``shards`` held by Ray actors, see
    evalcore.retrieval.sharded.driver; ``shards`` None: one per node, at least two),
    ``reranker`` (a local cross-encoder folder for ``rerank``).
    Endpoint or Python retriever: ``chunker`` and ``retriever_name`` (the configuration's names),
    ``score`` (``similarity`` or ``distance``), ``chunks`` (the retriever's whole chunk file,
    optional), ``max_failures`` (share of queries that may fail); a function also ``k`` and
    ``concurrency`` (threads calling it).
    """

    corpus: str | Path | Corpus | None = None
    questions: str | Path | None = None
    ood: str | Path | None = None
    dataset: str | None = None
    demo: bool = False
    confined: bool = False
    server_paths: bool = False
    name: str | None = None
    strategies: tuple[str, ...] = tuple(DEFAULT_STRATEGIES.split(","))
    retrievers: tuple[str, ...] = tuple(DEFAULT_RETRIEVERS.split(","))
    models: tuple[str, ...] = ()
    device: str = DEFAULT_DEVICE
    ray: str | None = None
    shards: int | None = None
    reranker: str | None = None
    endpoint: Endpoint | None = None
    function: Callable[[str, int], Any] | None = field(default=None, compare=False)
    k: int = DEFAULT_K
    concurrency: int = 1
    chunker: str = EXTERNAL
    retriever_name: str = EXTERNAL
    score: str = SIMILARITY
    chunks: str | Path | None = None
    max_failures: float = DEFAULT_MAX_FAILURES
    #: A built-in run's strategies, parsed once when the spec is built (empty for other runs).
    parsed_strategies: tuple[Strategy, ...] = field(default=(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.endpoint is not None and self.function is not None:
            raise ConfigError("a run measures an endpoint or a Python function, not both")
        if self.demo and (self.corpus is not None or self.questions is not None or self.dataset is not None):
            raise ConfigError("the demo brings its own corpus and questions: give demo or corpus/questions, not both")
        if self.dataset is not None and (self.questions is not None or self.ood is not None):
            raise ConfigError("run takes --dataset or --questions/--ood, not both")
        shards = self.shards
        if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int) or shards < 1):
            raise ConfigError(f"shards must be a whole number >= 1, got {shards!r}")
        if shards is not None and shards > MAX_SHARDS:
            raise ConfigError(
                f"--shards must be a whole number in [1, {MAX_SHARDS}] (one Ray actor each; a run uses at most "
                f"two per CPU of the cluster); got {shards}"
            )
        if self.ray is not None and not self.ray.strip():
            raise ConfigError("--ray needs an address: local, auto, HOST:PORT or ray://HOST[:PORT]; got ''")
        if shards is not None and not self.ray:
            raise ConfigError("shards split retrieval across Ray actors: give --ray ADDRESS (or local) too")
        if self.name is not None:
            object.__setattr__(self, "name", check_run_name(self.name))
        object.__setattr__(self, "models", tuple(self.models))
        self._check_whole()

    def _check_whole(self) -> None:
        """The rest of the spec, checked when it is built, before anything loads: the strategies
        and retrievers of a built-in run, an endpoint (and, confined, the operator's allow-list),
        a Python retriever and its ``k``, an external run's names and score kind, a question
        set's ``NAME@VERSION``. Each raises the error (and message) the run would otherwise meet."""
        if self.dataset is not None:
            parse_question_set_ref(self.dataset)
        strategies: object = self.strategies  # a comma list (the CLI's, a job's JSON) or names
        retrievers: object = self.retrievers
        if self.kind == "builtin":
            # parsed as given, so that an error quotes the list the user wrote
            parsed = parse_strategies(strategies if isinstance(strategies, str) else _names(strategies))
            object.__setattr__(self, "parsed_strategies", tuple(parsed))
            object.__setattr__(self, "strategies", _names(strategies))
            object.__setattr__(self, "retrievers", tuple(parse_retrievers(_names(retrievers))))
            return
        object.__setattr__(self, "strategies", _names(strategies))
        object.__setattr__(self, "retrievers", _names(retrievers))
        if self.endpoint is not None:
            self.endpoint.check()
            if self.confined:
                check_allowed(self.endpoint.url)  # checked again in the job's process (from_json)
            check_label(self.chunker, "--chunker")
            check_label(self.retriever_name, "--retriever")
        else:
            if not callable(self.function):
                raise ConfigError(
                    f"retriever must be a function (query, k) -> hits, got {type(self.function).__name__}"
                )
            if not isinstance(self.k, int) or self.k < 1:
                raise ConfigError(f"k must be an integer >= 1, got {self.k!r}")
            check_label(self.chunker, "chunker")
            check_label(self.retriever_name, "retriever_name")
        score_kind(self.score)

    @property
    def kind(self) -> str:
        """``builtin``, ``endpoint`` or ``python``."""
        return "endpoint" if self.endpoint is not None else "python" if self.function is not None else "builtin"

    @property
    def run_name(self) -> str:
        """The name the run is stored under: ``name``, else demo / the corpus folder / python / endpoint."""
        if self.name:
            return self.name
        if self.kind == "python":
            return PYTHON
        if self.kind == "endpoint":
            return "endpoint"
        if self.demo:
            return "demo"
        if isinstance(self.corpus, (str, Path)):
            return Path(self.corpus).resolve().name
        return "run"

    # -- JSON, for a job's process ---------------------------------------------------------
    def to_json(self) -> str:
        """The spec as JSON; ConfigError for what cannot travel (a function, a loaded corpus,
        an endpoint's header values, which are never written)."""
        if self.function is not None:
            raise ConfigError("a Python retriever runs in its caller's process; it cannot be written as JSON")
        if self.corpus is not None and not isinstance(self.corpus, (str, Path)):
            raise ConfigError("a loaded corpus cannot be written as JSON; give its folder")
        data: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "function" or not f.init:
                continue
            value = getattr(self, f.name)
            data[f.name] = str(value) if isinstance(value, Path) else value
        data["models"] = list(self.models)
        data["strategies"] = ",".join(self.strategies)  # the comma lists the CLI takes
        data["retrievers"] = ",".join(self.retrievers)
        data["endpoint"] = endpoint_json(self.endpoint) if self.endpoint is not None else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        """The spec :meth:`to_json` wrote; ConfigError naming an unknown field."""
        data = json.loads(text)
        known = {f.name for f in fields(cls) if f.init} - {"function"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"run spec: unknown field(s) {', '.join(unknown)}")
        data["models"] = tuple(data.get("models") or ())
        if data.get("endpoint") is not None:
            data["endpoint"] = endpoint_from_json(data["endpoint"])
        return cls(**data)


def _names(value: object) -> tuple[str, ...]:
    """A comma list (``"A, C"``) or a sequence of names as a tuple of names, each stripped,
    empty ones left out."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"strategies and retrievers are names or a comma list, got {value!r}")
    return tuple(str(item).strip() for item in items if str(item).strip())


def endpoint_json(endpoint: Endpoint) -> dict[str, Any]:
    """An endpoint's fields as JSON values; ConfigError when it has headers (never written)."""

    if endpoint.headers:
        raise ConfigError("an endpoint's header values are never written (they may be credentials)")
    data = asdict(endpoint)
    data.pop("headers")
    return data


def endpoint_from_json(data: dict[str, Any]) -> Endpoint:
    """The endpoint :func:`endpoint_json` wrote (``fields`` a dict; no headers)."""

    return from_spec(data)
