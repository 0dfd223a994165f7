"""The request bodies of the API as pydantic models: they give the OpenAPI 3.1 document its
schemas and refuse an unknown field, a wrong type or a number out of range with a 422 naming the
field, before any work starts. Numbers are finite (no NaN, no infinity); a max bluff or lost rate
lies in [1e-6, 1) (:data:`evalcore.measures.claim.MIN_RATE`), as does the gate's alpha
(:data:`evalcore.regression.gate.MIN_ALPHA`), a confidence in (0, 1), ``min_effect`` in [0, 1];
docs/API.md lists each."""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Literal, get_args, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, MIN_RATE, Claim
from evalcore.measures.metrics import DEFAULT_KS
from evalcore.regression.gate import DEFAULT_ALPHA as GATE_ALPHA
from evalcore.regression.gate import DEFAULT_METRIC, MIN_ALPHA

Rate = Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)]
#: a max bluff or lost rate of a claim: [MIN_RATE, 1)
ClaimRate = Annotated[float, Field(ge=MIN_RATE, lt=1.0, allow_inf_nan=False)]
Ref = Annotated[str, Field(min_length=1, max_length=300)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecisionIn(Body):
    """A threshold chosen for one configuration of a run, saved with the claim it is made under."""

    configuration: Annotated[str, Field(min_length=3, max_length=300, examples=["G/hybrid"])]
    threshold: Annotated[float, Field(allow_inf_nan=False)]
    note: Annotated[str, Field(max_length=2000)] = ""
    max_bluff_rate: ClaimRate = DEFAULT_ALPHA
    max_lost_rate: ClaimRate = DEFAULT_BETA
    confidence: Rate = DEFAULT_CONFIDENCE


class GateIn(Body):
    """``evalcore gate``'s options: RUN or RUN:CONFIG on each side."""

    baseline: Ref
    candidate: Ref
    metric: Annotated[str, Field(max_length=40)] = DEFAULT_METRIC
    alpha: Annotated[float, Field(ge=MIN_ALPHA, lt=1.0, allow_inf_nan=False)] = GATE_ALPHA
    holm: bool = True
    min_effect: Annotated[float | None, Field(ge=0.0, le=1.0, allow_inf_nan=False)] = None
    threshold_from_decision: bool = False


class DeploymentIn(Body):
    """The saved decision a deployment points at."""

    decision_id: Annotated[str, Field(min_length=1, max_length=64)]


class EvaluationIn(Body):
    """A run of the built-in pipeline, limited to what the New run screen allows: a question-set
    version of the store (``dataset``) or a corpus folder under the operator's data roots, the
    strategies and retrievers, and a name."""

    dataset: Annotated[str | None, Field(max_length=300, examples=["docs@3"])] = None
    corpus: Annotated[str | None, Field(max_length=4096)] = None
    questions: Annotated[str | None, Field(max_length=4096)] = None
    ood: Annotated[str | None, Field(max_length=4096)] = None
    demo: bool = False
    strategies: Annotated[str | None, Field(max_length=500, examples=["A,E"])] = None
    retrievers: Annotated[str | None, Field(max_length=500, examples=["dense,bm25"])] = None
    name: Annotated[str | None, Field(max_length=200)] = None


# -- the answers ---------------------------------------------------------------------------------
# What the routes send, field by field, for the OpenAPI document (each route declares its model in
# ``responses``; the route still sends the JSON its library function gives, through
# :func:`evalcore.api.serving.jsonout.answer`, where a number that is not finite is ``null``).


class ApiAnswer(BaseModel):
    """An answer's schema: the fields named are always sent; a field added later is no break."""


def _nullable_floats(hint: Any) -> Any:
    """``hint`` with ``float`` made ``float | None`` (the answer sends NaN and infinity as null)."""
    args = get_args(hint)
    if hint is float or (args and float in args):
        return float | None
    return hint


#: a claim (:meth:`evalcore.measures.claim.Claim.to_json`): every field of :class:`Claim`, all sent
ClaimOut: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "ClaimOut",
    __base__=ApiAnswer,
    __doc__="The threshold claim of one configuration (as `evalcore threshold --json` prints it).",
    **{f.name: (_nullable_floats(hint), ...) for f in fields(Claim) for hint in [get_type_hints(Claim)[f.name]]},
)


class RunRow(ApiAnswer):
    """One run's row of the store (its ``settings`` left out), times as ``YYYY-MM-DD HH:MM:SS``."""

    run_id: str
    name: str
    status: str
    reason: str | None
    stage: str | None
    progress: float | None
    created_at: str
    finished_at: str | None
    pid: int | None
    host: str | None
    corpus_root: str | None
    corpus_fingerprint: str | None
    questions_path: str | None
    ood_path: str | None
    model: str | None
    model_dim: int | None
    pipeline_version: str | None
    strategies: str | None
    retrievers: str | None
    rerank_note: str | None
    new_embeddings: int | None
    cached_embeddings: int | None
    question_set: str | None
    question_set_version: int | None


class RunPage(ApiAnswer):
    """A page of runs, newest first; ``next_cursor`` fetches the next page (null on the last)."""

    data: list[RunRow]
    next_cursor: str | None


class _ConfigurationFigures(ApiAnswer):
    strategy: str
    retriever: str
    queries: int
    mrr: float | None
    destroyed: int | None
    failed: int
    source: str | None = None
    model: str | None = None
    gate: str | None = None


Wilson = Annotated[list[float | None], Field(min_length=2, max_length=2)]
#: one configuration of :func:`evalcore.read.summary.summary_json`: recall@k (and its Wilson 95%
#: interval) for each k of :data:`DEFAULT_KS`, MRR, destroyed and failed queries, where its rankings came from
ConfigurationSummary: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "ConfigurationSummary",
    __base__=_ConfigurationFigures,
    __doc__="One configuration's figures (source, model and gate where the run knows them).",
    **{
        name: (kind, Field(alias=alias))
        for k in DEFAULT_KS
        for name, alias, kind in [
            (f"recall_{k}", f"recall@{k}", float | None),
            (f"recall_{k}_wilson95", f"recall@{k}_wilson95", Wilson),
        ]
    },
)


class RunSummary(ApiAnswer):
    """One run and its per-configuration summary (as `evalcore show --json` prints it)."""

    run_id: str
    name: str
    status: str
    reason: str | None
    rerank_note: str | None
    new_embeddings: int | None
    cached_embeddings: int | None
    queries_in: int | None
    queries_out: int | None
    configurations: list[ConfigurationSummary]  # type: ignore[valid-type]


class ClaimCheckOut(ApiAnswer):
    """Whether the deployed threshold meets the claim it was saved under
    (:func:`evalcore.measures.claim_check.meets_claim`): each side true, false, or null when that side
    makes no claim (too few questions); ``met`` false when either side fails. The bounds are as
    the screens print them, rounded on their safe side (``t bluff_op bluff_bound``; null when the
    side is unbounded or makes no claim); ``bluffs_at_t`` of ``n_ood`` off-topic questions bluff
    at the threshold, ``lost_at_t`` of ``n_answerable`` answerable ones lose their answer."""

    met: bool | None
    threshold: float
    axis: Literal["distance", "score"]
    bluff: bool | None
    lost: bool | None
    bluff_op: Literal["<=", ">"]
    lost_op: Literal["<=", ">"]
    bluff_bound: float | None
    lost_bound: float | None
    bluff_bound_text: str | None
    lost_bound_text: str | None
    max_bluff_rate: float
    max_lost_rate: float
    confidence: float
    n_ood: int
    n_answerable: int
    bluffs_at_t: int | None
    lost_at_t: int | None


class DeploymentOut(ApiAnswer):
    """Where a deployment points (:meth:`evalcore.service.deployments.Deployment.to_json`); times
    are ISO 8601 UTC with ``Z``; ``claim`` is the claim the decision was saved with, and
    ``meets_claim`` whether the deployed threshold meets it (null when no claim was saved)."""

    name: str
    decision_id: str
    threshold: float
    run_id: str
    configuration: str
    claim: dict[str, Any] | None
    decided_by: str | None
    decided_at: str | None
    deployed_by: str | None
    deployed_at: str | None
    version: int
    meets_claim: ClaimCheckOut | None


class MoveOut(ApiAnswer):
    """One move of a deployment; ``version`` is the deployment's version after it."""

    version: int
    moved_by: str | None
    moved_at: str | None
    from_decision_id: str | None
    from_threshold: float | None
    to_decision_id: str
    to_threshold: float


class DeploymentMoves(DeploymentOut):
    """A deployment and its moves, newest first."""

    moves: list[MoveOut]


class DeploymentList(ApiAnswer):
    """Every deployment, each with its moves."""

    data: list[DeploymentMoves]


class LineOut(ApiAnswer):
    """What became of one posted line (1-based): stored, duplicate, or problem (``reason`` says why)."""

    line: int
    id: str | None
    status: Literal["stored", "duplicate", "problem"]
    reason: str | None


class TrafficResults(ApiAnswer):
    """One result a posted line, in order."""

    results: list[LineOut]


class EvaluationOut(ApiAnswer):
    """An evaluation (:meth:`evalcore.service.evaluations.QueuedEvaluation.to_json`): its status,
    stage, progress (0 to 1), the run id once complete, why it failed or was cancelled, its times
    (ISO 8601 UTC with ``Z``) and its place in the queue."""

    id: str
    name: str
    status: str
    stage: str | None
    progress: float | None
    run_id: str | None
    reason: str | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    position: int | None


class Uploaded(ApiAnswer):
    """A run file stored (``loaded``: true) or found stored already (false), and the rows it holds."""

    run_id: str
    run_name: str
    loaded: bool
    rows: dict[str, int]
    notes: list[str]


class DecisionOut(ApiAnswer):
    """A saved decision and the claim it was made under."""

    decision_id: str
    run_id: str
    configuration: str
    threshold: float
    note: str
    author: str | None
    claim: ClaimOut  # type: ignore[valid-type]


class GateOut(ApiAnswer):
    """The gate's report (as `evalcore gate --format json` prints it) and ``passed``; each of
    ``configurations`` is one configuration's comparison (docs/API.md)."""

    verdict: Literal["pass", "fail"]
    passed: bool
    exit_code: int
    metric: str
    k: int
    alpha: float
    holm: bool
    min_effect: float | None
    threshold_from_decision: bool
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    queries: int
    test: str
    test_alpha: float | None
    detectable_difference: float | None
    smallest_flag: int | None
    sample_statement: str
    notes: list[str]
    configurations: list[dict[str, Any]]
