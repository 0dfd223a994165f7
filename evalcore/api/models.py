"""The request bodies of the API as pydantic models: they give the OpenAPI 3.1 document its
schemas and refuse an unknown field, a wrong type or a number out of range with a 422 naming the
field, before any work starts. Numbers are finite (no NaN, no infinity); a max bluff or lost rate
lies in [1e-6, 1) (:data:`evalcore.measures.claim.MIN_RATE`), as does the gate's alpha
(:data:`evalcore.regression.gate.MIN_ALPHA`), a confidence in (0, 1), ``min_effect`` in [0, 1];
docs/API.md lists each."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, MIN_RATE
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
