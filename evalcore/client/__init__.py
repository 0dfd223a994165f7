"""``evalcore.Client``: the evaluation service over HTTP (``/api/v1``), for CI, production and scripts.

Usage::

    import evalcore

    client = evalcore.Client("https://evalcore.example.org", key=os.environ["EVALCORE_API_KEY"])
    live = client.deployment("production")      # cheap: call it on every request
    refuse = live.threshold is not None and best_distance >= live.threshold
    if live.stale: ...                         # the service did not answer: the last known value

    client.upload_run("run.evalcore.zip")      # as `evalcore load-run`, on the service's store
    report = client.gate("main", "pr-42", min_effect=0.02)   # `gate --format json` + passed

Every method mirrors one resource of the API and returns the library's own records where it
has one (:class:`~evalcore.service.deployments.Deployment`,
:class:`~evalcore.service.deployments.DeploymentHistory`,
:class:`~evalcore.service.ingest.LineResult`, :class:`~evalcore.measures.claim.Claim`), else the
JSON object the CLI's ``--json`` prints. A problem the service answers (RFC 9457
problem+json) is raised as :class:`~evalcore.errors.ServiceError` with its status, title and
detail; a service that cannot be reached, or answers what the API never answers, is
:class:`~evalcore.errors.ServiceUnavailable`.

The client never holds or floods its caller: every call has one wall-clock deadline
(``timeout``, default 5 s) over the lookup, connect, send and the whole answer; an answer is
read as it streams and cut past its cap (``max_answer``, 1 MB, for a deployment); a redirect is
followed only within the service's own origin; ``http://`` to a host other than this machine
is refused unless ``allow_insecure=True`` (see :mod:`evalcore.client.transport`).

:meth:`Client.deployment` revalidates its cached value with ``If-None-Match`` at most every
``max_age`` seconds (the service answers 304 while nothing moved); one caller revalidates while
the others get the cached value, and whenever the look fails (unreachable, too slow, too large,
an answer that is not a valid deployment) it returns the last known value with ``stale`` true
and logs the reason once. It raises only while it has no value at all, and then a ServiceError.
It is safe to share one client between threads.

A deployment's ``meets_claim`` (:class:`~evalcore.measures.claim_check.ClaimCheck`: whether the
deployed threshold meets the claim it was saved under, side by side, with the bounds as the
screens print them) is None when the decision was saved without a claim, and also when the
service is older than the field and does not send it: such an answer is still a valid
deployment, never stale. A ``meets_claim`` that is sent but malformed makes the answer invalid
(stale, as any other field would).

The key is sent only as ``Authorization: Bearer ...`` and only to the service's origin; it never
appears in the client's ``repr``, a log line or an exception.

Modules: service (:class:`Client`), transport (the deadline, the cap, redirects), origin (the
URL checks), records (the library's records from the service's JSON, checked field by field).
"""

from __future__ import annotations

from evalcore.client.records import (
    LiveDeployment,
    claim_check_from_json,
    claim_from_json,
    deployment_from_json,
    evaluation_from_json,
    history_from_json,
)
from evalcore.client.service import (
    MAX_ANSWER,
    MAX_BYTES,
    MAX_LINES,
    MAX_REPORT,
    MAX_UPLOAD,
    PREFIX,
    RETRY_UNREACHABLE,
    REVALIDATE_TIMEOUT,
    TIMEOUT,
    Client,
)

__all__ = [
    "MAX_ANSWER",
    "MAX_BYTES",
    "MAX_LINES",
    "MAX_REPORT",
    "MAX_UPLOAD",
    "PREFIX",
    "RETRY_UNREACHABLE",
    "REVALIDATE_TIMEOUT",
    "TIMEOUT",
    "Client",
    "LiveDeployment",
    "claim_check_from_json",
    "claim_from_json",
    "deployment_from_json",
    "evaluation_from_json",
    "history_from_json",
]
